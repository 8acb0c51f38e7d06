package server_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/ops/samples"
)

// TestNotAnImageIsRefusedAtSubmit: an input an operation cannot read is
// refused with 400 bad_image naming the object, whatever the split (one
// unit, repeat, tiles), and creates no job; noop, which does not decode,
// takes it.
func TestNotAnImageIsRefusedAtSubmit(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Threads: 1})
	c, ctx := cl.Client, testCtx(t)
	text := put(t, c, []byte("this is not an image at all\n"))
	want := "input " + text + " cannot be read by blur: not a GIF, PNG or JPEG image"
	for _, spec := range []api.JobSpec{
		{Op: "blur", Input: text},
		{Op: "blur", Input: text, Repeat: 5},
		{Op: "blur", Input: text, Tiles: "2x2"},
	} {
		_, err := c.Submit(ctx, spec)
		if apiCode(err) != api.CodeBadImage || !strings.Contains(err.Error(), want) {
			t.Errorf("repeat %d tiles %q: %v, want %s: %s", spec.Repeat, spec.Tiles, err, api.CodeBadImage, want)
		}
	}
	if jobs, err := c.Jobs(ctx); err != nil || len(jobs) != 0 {
		t.Errorf("refused submissions created jobs: %v %v", jobs, err)
	}
	if j := runJob(t, c, api.JobSpec{Op: "noop", Input: text}); j.State != api.JobDone || j.Result != text {
		t.Errorf("noop on text: %s %q result %s, want done with the input as result", j.State, j.Error, j.Result)
	}
}

// TestResultShape: a job of one unit's result is that unit's output,
// with or without repeat 1; a repeat job of several units' result is a
// manifest, in which units with the same output share an entry.
func TestResultShape(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Threads: 2})
	c := cl.Client
	in := put(t, c, samples.GIF())
	want, err := ops.Run("blur", nil, samples.GIF())
	if err != nil {
		t.Fatal(err)
	}
	for _, repeat := range []int{0, 1} {
		j := runJob(t, c, api.JobSpec{Op: "blur", Input: in, Repeat: repeat})
		got, err := c.GetBytes(testCtx(t), j.Result)
		if j.State != api.JobDone || err != nil || !bytes.Equal(got, want) {
			t.Errorf("repeat %d: %s, result %s (%v): want the blurred image itself", repeat, j.State, j.Result, err)
		}
	}
	j := runJob(t, c, api.JobSpec{Op: "blur", Input: in, Repeat: 2})
	b, err := c.GetBytes(testCtx(t), j.Result)
	var m api.Manifest
	if err != nil || json.Unmarshal(b, &m) != nil || len(m.Units) != 1 || m.Units[0].Units() != 2 || m.Units[0].Output == "" {
		t.Errorf("repeat 2: result %s is not a manifest of one entry for the 2 units' one output: %.200s (%v)", j.Result, b, err)
	}
}
