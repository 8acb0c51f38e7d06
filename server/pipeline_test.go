package server_test

import (
	"strings"
	"testing"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/ops/samples"
	"github.com/braidhq/braid/userop/wasmtest"
)

// TestPipeline: a pipeline's units run its operations back to back on one
// worker, with per-step parameters; the result equals running the steps
// one after the other, and a tiled pipeline (its halo the sum of the
// steps' reaches) equals the whole-image one.
func TestPipeline(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Threads: 2}, cluster.WorkerSpec{Threads: 1})
	ctx := testCtx(t)
	c := cl.Client
	gif := put(t, c, samples.GIF())
	j := runJob(t, c, api.JobSpec{Op: "blur,sobel", Input: gif, Params: map[string]string{"blur.sigma": "1.5"}})
	if j.State != api.JobDone {
		t.Fatalf("pipeline: %s %s", j.State, j.Error)
	}
	mid, err := ops.Run("blur", ops.Params{"sigma": "1.5", "format": "png"}, samples.GIF())
	if err != nil {
		t.Fatal(err)
	}
	want, err := ops.Run("sobel", ops.Params{"format": "gif"}, mid)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetBytes(ctx, j.Result); err != nil || string(got) != string(want) {
		t.Fatalf("pipeline result (%d bytes, %v) differs from blur then sobel (%d bytes)", len(got), err, len(want))
	}

	png := put(t, c, samples.PNG())
	params := map[string]string{"1.sigma": "1", "sharpen.amount": "0.5"}
	tiled := runJob(t, c, api.JobSpec{Op: "blur,sharpen", Input: png, Params: params, Tiles: "3x2"})
	whole := runJob(t, c, api.JobSpec{Op: "blur,sharpen", Input: png, Params: params})
	if tiled.State != api.JobDone || whole.State != api.JobDone || tiled.Result != whole.Result {
		t.Fatalf("tiled pipeline %s (%s, %s) differs from whole-image %s (%s, %s)",
			tiled.Result, tiled.State, tiled.Error, whole.Result, whole.State, whole.Error)
	}

	// echo writes its input, then its arguments: the step's parameters.
	echo := addOp(t, c, wasmtest.EchoArgs(), api.OperationSpec{Name: "echo",
		Params: []api.Parameter{{Name: "lower", Type: "bool", Default: "false"}}})
	text := put(t, c, []byte("A a b\n"))
	j = runJob(t, c, api.JobSpec{Op: "noop,echo,echo", Input: text, Params: map[string]string{"2.lower": "true"}})
	if j.State != api.JobDone || j.Spec.OpVersions["echo"] != echo.Version {
		t.Fatalf("pipeline of user operations: %+v", j)
	}
	if got, _ := c.GetBytes(ctx, j.Result); string(got) != "A a b\necho\n--lower=true\necho\n--lower=false\n" {
		t.Fatalf("echo,echo result %q, want step 2's parameter lower=true and step 3's default", got)
	}

	for _, tc := range []struct {
		spec api.JobSpec
		want string
	}{
		{api.JobSpec{Op: "blur,sobel", Input: gif, Params: map[string]string{"sigma": "2"}}, `parameter "sigma": in a pipeline, name its operation`},
		{api.JobSpec{Op: "blur,,sobel", Input: gif}, "none empty"},
		{api.JobSpec{Op: "blur,nope", Input: gif}, `unknown operation "nope"`},
		{api.JobSpec{Op: "blur,sobel", Input: gif, Params: map[string]string{"grayscale.x": "1"}}, "grayscale is not an operation of the pipeline"},
		{api.JobSpec{Op: "blur,sobel", Input: gif, Params: map[string]string{"3.sigma": "1"}}, "steps 1 to 2"},
		{api.JobSpec{Op: "blur,sobel", Input: gif, Params: map[string]string{"blur.sigma": "-1"}}, "step 1: blur"},
		{api.JobSpec{Op: "blur,echo", Input: gif, Params: map[string]string{"format": "png"}}, "is a user operation"},
		{api.JobSpec{Op: "blur,resize", Input: gif, Params: map[string]string{"resize.width": "10"}, Tiles: "2x2"}, "cannot be tiled: step 2"},
		{api.JobSpec{Op: "blur,sobel", Input: gif, UnitTimeoutMS: 10}, "has none"},
		{api.JobSpec{Op: "noop,echo", Input: gif, OpVersions: map[string]int{"blur": 1}}, "not a user operation of the pipeline"},
	} {
		if _, err := c.Submit(ctx, tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want an error saying %q", tc.spec.Op, tc.spec.Params, err, tc.want)
		}
	}
}

// TestTiledUserOp: braid's blur compiled to WebAssembly, registered with
// a reach, tiled 2×2, gives the built-in whole-image blur's bytes.
func TestTiledUserOp(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Threads: 2})
	c := cl.Client
	addOp(t, c, wasmtest.Build(t, "./examples/ops/blur", false), api.OperationSpec{Name: "wblur", Reach: new(6),
		Params: []api.Parameter{{Name: "sigma", Type: "float", Default: "2"}}, Limits: api.OpLimits{MemoryMiB: 512}})
	gif := put(t, c, samples.GIF())
	tiled := runJobCtx(t, ctxFor(t, wasmTimeout), c, api.JobSpec{Op: "wblur", Input: gif, Tiles: "2x2"})
	whole := runJob(t, c, api.JobSpec{Op: "blur", Input: gif})
	if tiled.State != api.JobDone || whole.State != api.JobDone || tiled.Result != whole.Result {
		t.Fatalf("tiled user blur %s (%s %s) differs from the built-in %s (%s %s)",
			tiled.Result, tiled.State, tiled.Error, whole.Result, whole.State, whole.Error)
	}
}
