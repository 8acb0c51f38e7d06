package server_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/server"
)

// TestWorkerHoldBoundsInFlight: a worker that says it can hold 250 KiB of
// inputs is sent no more than that of 100 KiB units, however wide the
// windows; one not yet measured gets a unit per stream and one more; with
// byte budgets off, one that says nothing fills its windows. None of them
// answers, so what they received is what was in flight.
func TestWorkerHoldBoundsInFlight(t *testing.T) {
	const size = 100 << 10
	for _, c := range []struct {
		name    string
		hold    int64
		horizon time.Duration
		want    int
	}{
		{"holds 250 KiB", 250 << 10, -1, 2},
		{"not measured", 0, 0, 2 + 1},
		{"says nothing, no byte budgets", 0, -1, 2 * 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := testCtx(t)
			r := runServer(t, server.Config{DataDir: t.TempDir(), Window: 8, ByteHorizon: c.horizon})
			fw := startFakeWorker(t, r.c, testSecret, "stuck", 2, time.Hour, func(info *api.WorkerInfo) { info.HoldBytes = c.hold })
			in := put(t, r.c, bytes.Repeat([]byte{7}, size))
			if _, err := r.c.Submit(ctx, api.JobSpec{Op: "noop", Input: in, Repeat: 40}); err != nil {
				t.Fatal(err)
			}
			waitFor(ctx, t, "units in flight", func() bool { return len(fw.received()) >= c.want })
			time.Sleep(300 * time.Millisecond) // more would come by now
			if n := len(fw.received()); n != c.want {
				t.Errorf("the worker received %d units of %d bytes, want %d", n, size, c.want)
			}
		})
	}
}

// TestWorkerHoldUpdates: a worker that re-announces a larger hold is sent
// more at once, and the figure it registered no longer bounds it.
func TestWorkerHoldUpdates(t *testing.T) {
	const size = 100 << 10
	ctx := testCtx(t)
	r := runServer(t, server.Config{DataDir: t.TempDir(), Window: 8, ByteHorizon: -1})
	fw := startFakeWorker(t, r.c, testSecret, "stuck", 2, time.Hour, func(info *api.WorkerInfo) { info.HoldBytes = 250 << 10 })
	in := put(t, r.c, bytes.Repeat([]byte{7}, size))
	if _, err := r.c.Submit(ctx, api.JobSpec{Op: "noop", Input: in, Repeat: 40}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "units in flight", func() bool { return len(fw.received()) >= 2 })
	info := fw.info
	info.HoldBytes = 550 << 10
	if err := r.c.WithSecret(testSecret).UpdateWorker(ctx, info); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "more units in flight", func() bool { return len(fw.received()) >= 5 })
	time.Sleep(300 * time.Millisecond) // more would come by now
	if n := len(fw.received()); n != 5 {
		t.Errorf("after the worker said it holds 550 KiB it had %d units of 100 KiB, want 5", n)
	}
}
