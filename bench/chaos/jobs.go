package chaos

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/ops/samples"
)

// The workload: the paper's blur of a small GIF, repeated, and a blur of a
// larger PNG cut into tiles.
var (
	repeatParams = map[string]string{"sigma": "2"}
	tiledParams  = map[string]string{"sigma": "2"}
)

const tiles = "3x3"

// expected are the outputs a fault-free run produces, computed here.
type expected struct {
	gif, png   string // input object ids
	unit       string // every repeat unit's output id
	tiledWhole string // the tiled job's result id (the whole-image blur)
}

func computeExpected() (expected, error) {
	unit, err := ops.Run("blur", ops.Params(repeatParams), samples.GIF())
	if err != nil {
		return expected{}, err
	}
	whole, err := ops.Run("blur", ops.Params(tiledParams), samples.PNG())
	if err != nil {
		return expected{}, err
	}
	return expected{gif: sum(samples.GIF()), png: sum(samples.PNG()), unit: sum(unit), tiledWhole: sum(whole)}, nil
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// jobs keeps jobs running: one loop submits repeat jobs, another tiled
// ones, each submitting the next when the last is over, until stop. It
// records every job the server accepted.
type jobs struct {
	c     *client.Client
	units int

	mu       sync.Mutex // guards accepted and errs
	accepted []string
	errs     []string
}

func (js *jobs) run(ctx context.Context, stop <-chan struct{}, spec api.JobSpec) {
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		j, err := js.c.Submit(ctx, spec)
		if err != nil { // the server may be down, or went down mid-request
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-afterPoll():
			}
			continue
		}
		js.mu.Lock()
		js.accepted = append(js.accepted, j.ID)
		js.mu.Unlock()
		if _, err := js.c.Wait(ctx, j.ID, nil); err != nil && ctx.Err() == nil {
			js.fail("waiting for job %s: %v", j.ID, err)
		}
	}
}

func (js *jobs) fail(format string, args ...any) {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.errs = append(js.errs, fmt.Sprintf(format, args...))
}

func (js *jobs) ids() []string {
	js.mu.Lock()
	defer js.mu.Unlock()
	return append([]string(nil), js.accepted...)
}

// verdict is what checking the jobs found.
type verdict struct {
	jobs, tiled, units, again int
	violations                []string
}

// check verifies every job the server lists and every job it accepted:
// done, one output per unit, outputs equal to the fault-free ones.
func check(ctx context.Context, c *client.Client, accepted []string, want expected) verdict {
	var v verdict
	listed, err := c.Jobs(ctx)
	if err != nil {
		v.violations = append(v.violations, fmt.Sprintf("listing jobs: %v", err))
		return v
	}
	known := map[string]bool{}
	for _, j := range listed {
		known[j.ID] = true
	}
	for _, id := range accepted {
		if !known[id] {
			v.violations = append(v.violations, fmt.Sprintf("job %s was accepted (201) but the server does not know it", id))
		}
	}
	for _, j := range listed {
		v.jobs++
		if j.Spec.Tiles != "" {
			v.tiled++
		}
		v.violations = append(v.violations, checkJob(ctx, c, j.ID, want, &v)...)
	}
	return v
}

func checkJob(ctx context.Context, c *client.Client, id string, want expected, v *verdict) []string {
	j, err := c.Job(ctx, id, true)
	if err != nil {
		return []string{fmt.Sprintf("job %s: %v", id, err)}
	}
	if j.State != api.JobDone {
		return []string{fmt.Sprintf("job %s is %s (%s), not done", id, j.State, j.Error)}
	}
	v.units += len(j.Units)
	var bad []string
	for _, u := range j.Units {
		v.again += max(u.Attempts-1, 0)
		if u.State != "done" || u.Output == "" {
			bad = append(bad, fmt.Sprintf("job %s unit %d is %s with output %q", id, u.Index, u.State, u.Output))
		}
	}
	if j.Spec.Tiles != "" {
		return append(bad, sameObject(ctx, c, id, "result", j.Result, want.tiledWhole)...)
	}
	for _, u := range j.Units {
		if u.Output != want.unit {
			bad = append(bad, fmt.Sprintf("job %s unit %d: output %s, a fault-free blur gives %s", id, u.Index, u.Output, want.unit))
		}
	}
	if j.Progress.Total == 1 { // the result of a job of one unit is its output
		return append(bad, sameObject(ctx, c, id, "result", j.Result, want.unit)...)
	}
	return append(bad, checkManifest(ctx, c, j, want)...)
}

// checkManifest checks that the result of a repeat job of several units
// lists exactly one output per unit, each the fault-free one.
func checkManifest(ctx context.Context, c *client.Client, j api.Job, want expected) []string {
	b, err := c.GetBytes(ctx, j.Result)
	if err != nil {
		return []string{fmt.Sprintf("job %s: manifest %s: %v", j.ID, j.Result, err)}
	}
	var m api.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return []string{fmt.Sprintf("job %s: manifest: %v", j.ID, err)}
	}
	units := m.Expand()
	if len(units) != j.Spec.Repeat {
		return []string{fmt.Sprintf("job %s: manifest lists %d units, the job has %d", j.ID, len(units), j.Spec.Repeat)}
	}
	var bad []string
	for i, u := range units {
		if u.Index != i || u.Output != want.unit {
			bad = append(bad, fmt.Sprintf("job %s: manifest entry %d is unit %d with output %s", j.ID, i, u.Index, u.Output))
		}
	}
	return bad
}

// sameObject checks that object id exists and has the content whose id is
// want.
func sameObject(ctx context.Context, c *client.Client, job, what, id, want string) []string {
	if id != want {
		return []string{fmt.Sprintf("job %s: %s is %s, a fault-free run gives %s", job, what, id, want)}
	}
	b, err := c.GetBytes(ctx, id)
	if err != nil || sum(b) != want {
		return []string{fmt.Sprintf("job %s: %s %s cannot be read back whole (%v)", job, what, id, err)}
	}
	return nil
}

// upload stores the workload's inputs.
func upload(ctx context.Context, c *client.Client) error {
	for _, b := range [][]byte{samples.GIF(), samples.PNG()} {
		if _, err := c.Put(ctx, bytes.NewReader(b)); err != nil {
			return err
		}
	}
	return nil
}
