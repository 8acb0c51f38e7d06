package server

import (
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/server/statedb"
)

// TestRestoredTerminalCounts: a failed job's record written before
// terminal counts existed (it kept "6 running, 493 pending" for ever) is
// shown with final counts.
func TestRestoredTerminalCounts(t *testing.T) {
	rec := statedb.Job{ID: "j-1", State: api.JobFailed, ReceivedAt: time.Now(),
		Progress: api.Progress{Total: 500, Running: 6, Failed: 1, Pending: 493}}
	got := restoredJob(rec).snapshot()
	want := api.Progress{Total: 500, Failed: 1, Cancelled: 499}
	if got.Progress != want {
		t.Errorf("restored progress %+v, want %+v", got.Progress, want)
	}
}
