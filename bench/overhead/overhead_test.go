package overhead

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops/samples"
	"github.com/braidhq/braid/userop/wasmtest"
)

// TestRunInProcess runs the benchmark on a cluster in this process, one
// job of repeats and one of an object per unit, and reads the table.
func TestRunInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var log strings.Builder
	for _, inputs := range []bool{false, true} {
		rs, err := Run(ctx, Config{Transports: []string{"tcpn", "tcpn+tls"}, Units: 40, Runs: 2, Size: 1 << 10,
			Workers: 1, Threads: 2, Op: Op{Inputs: inputs}, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 4 {
			t.Fatalf("%d results, want 2 transports × 2 runs", len(rs))
		}
		for i, r := range rs {
			want := []string{"tcpn", "tcpn+tls"}[i/2]
			if r.Transport != want || r.Op != "noop" || r.Units != 40 || r.Inputs != inputs || r.UnitsPerSec <= 0 || r.MakespanMS <= 0 {
				t.Errorf("result %d: %+v, want %s, noop, 40 units, inputs %v, a rate", i, r, want, inputs)
			}
		}
		var table strings.Builder
		if err := WriteTable(&table, rs, 2); err != nil {
			t.Fatal(err)
		}
		if lines := strings.Split(strings.TrimSpace(table.String()), "\n"); len(lines) != 3 || !strings.Contains(lines[2], "tcpn+tls") {
			t.Errorf("table of 2 transports:\n%s", table.String())
		}
	}
	if !strings.Contains(log.String(), "uploading 40 objects of 1024 bytes") {
		t.Errorf("log %q: no word of the uploads", log.String())
	}
}

func TestRunUnknownTransport(t *testing.T) {
	_, err := Run(context.Background(), Config{Transports: []string{"udp"}, Units: 1, Runs: 1})
	if err == nil || !strings.HasPrefix(err.Error(), "udp: ") {
		t.Errorf("transport udp: %v, want an error that names it", err)
	}
}

// TestRunOpOnInput runs a built-in operation and a user operation's
// module with parameters on a given input, and counts their CPU time.
func TestRunOpOnInput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, op := range []Op{
		{Name: "blur", Params: map[string]string{"sigma": "1"}, Input: samples.GIF()},
		{Name: "bench-wasm", Module: wasmtest.Module(), ABI: api.ABICommand, // returns at once
			Params: map[string]string{"mode": "echo"}, Input: []byte("hello")},
	} {
		rs, err := Run(ctx, Config{Transports: []string{"tcp"}, Units: 6, Runs: 1, Workers: 1, Threads: 2, Op: op})
		if err != nil {
			t.Fatalf("%s: %v", op.Name, err)
		}
		if r := rs[0]; len(rs) != 1 || r.Op != op.Name || r.Size != len(op.Input) || r.Units != 6 || !(r.CPUPerUnitMS > 0) {
			t.Errorf("%s: %+v, want one run of 6 units of %d bytes with their CPU time", op.Name, rs, len(op.Input))
		}
	}
	_, err := Run(ctx, Config{Op: Op{Input: []byte("x"), Inputs: true}})
	if err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("Input and Inputs: %v, want an error", err)
	}
}
