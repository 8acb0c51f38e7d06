package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/cluster"
)

// manifestOf reads a job's result manifest.
func manifestOf(t *testing.T, c *client.Client, j api.Job) api.Manifest {
	t.Helper()
	b, err := c.GetBytes(testCtx(t), j.Result)
	if err != nil {
		t.Fatal(err)
	}
	var m api.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("manifest: %v\n%s", err, b)
	}
	return m
}

// TestManyInputs: a job over many objects, given inline or as a list
// object, runs one unit per object, and its manifest pairs each input with
// its output; it resumes after a restart of the server.
func TestManyInputs(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: dir, Workers: []cluster.WorkerSpec{{Threads: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 300 {
		ids = append(ids, put(t, cl.Client, fmt.Appendf(nil, "object %d", i)))
	}
	check := func(j api.Job, want []string) {
		t.Helper()
		if j.State != api.JobDone || j.Progress.Done != len(want) {
			t.Fatalf("job %+v", j)
		}
		m := manifestOf(t, cl.Client, j)
		if len(m.Units) != len(want) {
			t.Fatalf("manifest of %d units, want %d", len(m.Units), len(want))
		}
		for i, u := range m.Units {
			if u.Index != i || u.Input != want[i] || u.Output != want[i] { // noop: output = input
				t.Fatalf("manifest unit %d: %+v, want input and output %s", i, u, want[i])
			}
		}
	}
	check(runJob(t, cl.Client, api.JobSpec{Op: "noop", Inputs: ids[:5]}), ids[:5])
	check(runJob(t, cl.Client, api.JobSpec{Op: "noop", Inputs: ids[7:8]}), ids[7:8])
	list := put(t, cl.Client, []byte("# all of them\n"+strings.Join(ids, "\n")+"\n\n"))
	check(runJob(t, cl.Client, api.JobSpec{Op: "noop", InputList: list}), ids)

	missing := strings.Repeat("0", 64)
	for _, tc := range []struct {
		spec api.JobSpec
		want string
	}{
		{api.JobSpec{Op: "noop"}, "no input"},
		{api.JobSpec{Op: "noop", Input: ids[0], Inputs: ids[:2]}, "give one of input, inputs, input_list and input_job"},
		{api.JobSpec{Op: "noop", Inputs: ids[:2], Repeat: 3}, "a job of one input"},
		{api.JobSpec{Op: "noop", Inputs: []string{ids[0], "zz"}}, `inputs[1] "zz" is not an object id`},
		{api.JobSpec{Op: "noop", Inputs: []string{ids[0], missing}}, "input 1, object " + missing + ", does not exist"},
		{api.JobSpec{Op: "noop", Inputs: make([]string, api.MaxInputs+1)}, "list more in an object"},
		{api.JobSpec{Op: "noop", InputList: put(t, cl.Client, []byte(ids[0]+"\nnot an id\n"))}, "input list line 2"},
		{api.JobSpec{Op: "noop", InputList: put(t, cl.Client, []byte("# nothing\n"))}, "names no object"},
		{api.JobSpec{Op: "noop", InputList: missing}, "input list " + missing + " does not exist"},
	} {
		if _, err := cl.Client.Submit(ctx, tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", tc.spec, err, tc.want)
		}
	}
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}

	// No workers: the job is on record, unfinished, when the server stops.
	cl, err = cluster.Start(ctx, cluster.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	pending, err := cl.Client.Submit(ctx, api.JobSpec{Op: "noop", InputList: list})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Client.DeleteObject(ctx, ids[3]); apiCode(err) != api.CodeConflict {
		t.Errorf("deleting an input of a waiting job: %v, want a conflict", err)
	}
	cl = restartWithWorkers(t, cl, dir)
	j, err := cl.Client.Wait(ctx, pending.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(j, ids)
}

// TestInputNames: a job's input_names, one per input, name the manifest's
// units; a count that does not match, or a name that is a path, hidden or
// holds a control character, is refused before anything runs.
func TestInputNames(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Threads: 1})
	ctx := testCtx(t)
	a, b := put(t, cl.Client, []byte("a")), put(t, cl.Client, []byte("b"))
	j := runJob(t, cl.Client, api.JobSpec{Op: "noop", Inputs: []string{a, b}, InputNames: []string{"a.txt", ""}})
	m := manifestOf(t, cl.Client, j)
	if len(m.Units) != 2 || m.Units[0].Name != "a.txt" || m.Units[1].Name != "" {
		t.Errorf("manifest units %+v; want the first named a.txt, the second not", m.Units)
	}
	for _, names := range [][]string{{"a.txt"}, {"a", "b", "c"}, {"../x", "b"}, {"a", "x/y"}, {".hidden", "b"}, {"a\x1b[31m", "b"}, {"a", strings.Repeat("n", 256)}} {
		_, err := cl.Client.Submit(ctx, api.JobSpec{Op: "noop", Inputs: []string{a, b}, InputNames: names})
		if code := apiCode(err); code != api.CodeBadRequest && code != api.CodeBadParameter {
			t.Errorf("input_names %q: %v; want a 400", names, err)
		}
	}
}
