package tperf

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/transport"
)

// Sweep is `braid bench transport`'s matrix: one test for every transport,
// mode and stream count, in that order of loops.
type Sweep struct {
	// Transports by name; NAME+tls forces data-plane encryption
	// (transports.SplitTLS), and the results keep the name as given.
	Transports []string
	Modes      []string
	Streams    []int
	// Size is the message size; 0 picks each mode's: 64 KiB for bulk,
	// 19 KiB for rr, Config's default for hol.
	Size     int
	Duration time.Duration
	// Listen, Connect, File and Secret are every test's (Config).
	Listen, Connect, File string
	Secret                []byte
	// Samples is a listen side's Config.Samples.
	Samples string
	// Options tune the transports.
	Options transports.Options
	// Net, if set, runs each test across its emulated network instead of
	// in this process (Listen, Connect and File are then not used).
	Net *Net
	// Log gets a line as each test starts, and "listening on ADDR" once a
	// listen-only side listens (default: discarded).
	Log io.Writer
}

// RunSweep runs the tests one after another and returns their results in
// order; it stops at the first that fails, or at a transport it does not
// know.
func RunSweep(ctx context.Context, s Sweep) ([]Result, error) {
	if s.Log == nil {
		s.Log = io.Discard
	}
	var results []Result
	for _, tname := range s.Transports {
		for _, mode := range s.Modes {
			for _, n := range s.Streams {
				base, opts := transports.SplitTLS(tname, s.Options)
				t, err := transports.New(base, opts)
				if err != nil {
					return results, err
				}
				fmt.Fprintf(s.Log, "measuring %s %s, %d streams...\n", tname, mode, n)
				r, err := sweepOne(ctx, s, t, tname, mode, n)
				if err != nil {
					return results, fmt.Errorf("%s %s %d streams: %w", tname, mode, n, err)
				}
				r.Transport = tname // tcpn+tls, not tcpn
				results = append(results, r)
			}
		}
	}
	return results, nil
}

// sweepOne runs one test of transport t, named tname.
func sweepOne(ctx context.Context, s Sweep, t transport.Transport, tname, mode string, n int) (Result, error) {
	if s.Net != nil {
		return s.Net.Run(ctx, tname, mode, n)
	}
	return Run(ctx, Config{Transport: t, Listen: s.Listen, Connect: s.Connect, Streams: n,
		Size: sizeFor(s.Size, mode), Mode: mode, Duration: s.Duration, File: s.File, Secret: s.Secret, Samples: s.Samples,
		Ready: func(addr string) { fmt.Fprintf(s.Log, "listening on %s\n", addr) }})
}

// sizeFor is the message size of a test in mode when the sweep's is size.
func sizeFor(size int, mode string) int {
	switch {
	case size > 0:
		return size
	case mode == "rr":
		return 19 << 10
	case mode == "hol":
		return 0 // Config's default for the bulk stream
	}
	return 64 << 10
}
