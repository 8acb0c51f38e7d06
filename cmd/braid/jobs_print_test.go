package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
)

// TestPrintJob: status shows parameters as k=v, a running job's units
// split into sent and running, a finished job's final counts (nothing
// running or pending for ever), and "1 unit".
func TestPrintJob(t *testing.T) {
	spec := api.JobSpec{Op: "blur", Input: strings.Repeat("a", 64), Params: map[string]string{"sigma": "2", "format": "png"}}
	cases := []struct {
		job       api.Job
		want, not []string
	}{
		{api.Job{ID: "j-1", Spec: spec, State: api.JobRunning,
			Progress: api.Progress{Total: 20, Done: 5, Sent: 4, Running: 2, Pending: 11}},
			[]string{"blur format=png sigma=2 on aaaa", "20 total: 5 done, 0 failed, 4 sent (2 running), 11 pending"},
			[]string{"map["}},
		{api.Job{ID: "j-2", Spec: spec, State: api.JobFailed, Error: "unit 3 failed",
			Progress: api.Progress{Total: 500, Failed: 1, Cancelled: 499}, UnitsPerWorker: map[string]int{"w1": 1}},
			[]string{"500 total: 0 done, 1 failed, 499 cancelled (no result)", "worker w1  1 unit\n"},
			[]string{"running", "pending", "1 units"}},
	}
	for _, tc := range cases {
		var out bytes.Buffer
		printJob(&out, tc.job)
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.job.State, w, out.String())
			}
		}
		for _, n := range tc.not {
			if strings.Contains(out.String(), n) {
				t.Errorf("%s: output has %q:\n%s", tc.job.State, n, out.String())
			}
		}
	}
}

func TestProgressText(t *testing.T) {
	j := api.Job{ID: "j-1", State: api.JobRunning, ReceivedAt: time.Now(),
		Progress: api.Progress{Total: 20, Done: 5, Sent: 4, Running: 2, Pending: 11}}
	if got := progressText(j); !strings.Contains(got, "5/20 units, 2 running, 4 sent") {
		t.Errorf("running: %q", got)
	}
	j.State, j.Progress = api.JobCancelled, api.Progress{Total: 1, Cancelled: 1}
	if got := progressText(j); !strings.Contains(got, "0/1 unit, cancelled") {
		t.Errorf("cancelled: %q", got)
	}
}
