package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/bench/chaos"
	"github.com/braidhq/braid/internal/transports"
)

// TestChaos runs the fault-injection instrument's short form on the
// default transport: a server and three worker processes, repeat and tiled
// jobs, and a seeded schedule that kills, freezes, stops and cuts off
// workers and kills and stops the server (seed 1 tries every kind of fault
// in 30 s). Every invariant must hold at the end (see package chaos).
// `braid bench chaos --transport sctp,tcpn,tcp,quic` runs it on every
// transport (2.5 minutes; each has its conformance suite's liveness cases
// here), and with a longer --duration, the long form.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of processes for a minute")
	}
	for _, tr := range []string{transports.Default} {
		t.Run(tr, func(t *testing.T) {
			var log strings.Builder
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			rep, err := chaos.Run(ctx, chaos.Config{Exe: braidBin, Transport: tr, Duration: 30 * time.Second,
				Seed: 1, Units: 100, Recovery: 90 * time.Second, Log: &log})
			if rep != nil {
				var out strings.Builder
				rep.Print(&out)
				t.Log("\n" + out.String())
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			if !rep.OK() {
				t.Fatalf("invariants broken; what happened:\n%s", log.String())
			}
		})
	}
}
