package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/userop/wasmtest"
)

// TestInputJob: a job over another job's outputs runs one unit per
// upstream unit on its output, released as each exists; it survives a
// restart of the server with both jobs unfinished, and fails when its
// upstream is cancelled.
func TestInputJob(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: dir}) // no workers yet
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 30 {
		ids = append(ids, put(t, cl.Client, fmt.Appendf(nil, "object %d", i)))
	}
	up, err := cl.Client.Submit(ctx, api.JobSpec{Op: "noop", Inputs: ids})
	if err != nil {
		t.Fatal(err)
	}
	down, err := cl.Client.Submit(ctx, api.JobSpec{Op: "noop", InputJob: up.ID})
	if err != nil {
		t.Fatal(err)
	}
	if down.Progress.Total != 30 {
		t.Fatalf("downstream job of %d units, want 30", down.Progress.Total)
	}
	// A second pair, to cancel.
	up2, err := cl.Client.Submit(ctx, api.JobSpec{Op: "noop", Inputs: ids[:3]})
	if err != nil {
		t.Fatal(err)
	}
	down2, err := cl.Client.Submit(ctx, api.JobSpec{Op: "noop", InputJob: up2.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Client.Cancel(ctx, up2.ID); err != nil {
		t.Fatal(err)
	}
	j, err := cl.Client.Wait(ctx, down2.ID, nil)
	if err != nil || j.State != api.JobFailed || !strings.Contains(j.Error, "its input job "+up2.ID+" was cancelled") {
		t.Fatalf("the job over a cancelled job: %+v, %v", j, err)
	}
	for _, tc := range []struct {
		spec api.JobSpec
		want string
	}{
		{api.JobSpec{Op: "noop", InputJob: "nope"}, "not a job id"},
		{api.JobSpec{Op: "noop", InputJob: "j-000000000000"}, "no job j-000000000000"},
		{api.JobSpec{Op: "noop", InputJob: up2.ID}, "is cancelled"},
		{api.JobSpec{Op: "noop", InputJob: up.ID, Repeat: 2}, "a job of one input"},
	} {
		if _, err := cl.Client.Submit(ctx, tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", tc.spec, err, tc.want)
		}
	}
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}

	cl, err = cluster.Start(ctx, cluster.Config{DataDir: dir, Workers: []cluster.WorkerSpec{{Threads: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	j, err = cl.Client.Wait(ctx, down.ID, nil)
	if err != nil || j.State != api.JobDone {
		t.Fatalf("downstream job after a restart: %+v, %v", j, err)
	}
	m := manifestOf(t, cl.Client, j)
	for i, u := range m.Units {
		if u.Input != ids[i] || u.Output != ids[i] { // noop after noop: the same object
			t.Fatalf("unit %d: %+v, want input and output %s", i, u, ids[i])
		}
	}
	// A running pair: the downstream job is submitted while the upstream
	// runs, and its units follow the upstream's.
	up, err = cl.Client.Submit(ctx, api.JobSpec{Op: "noop", Inputs: ids})
	if err != nil {
		t.Fatal(err)
	}
	down, err = cl.Client.Submit(ctx, api.JobSpec{Op: "noop", InputJob: up.ID})
	if err != nil {
		t.Fatal(err)
	}
	if j, err = cl.Client.Wait(ctx, down.ID, nil); err != nil || j.State != api.JobDone || j.Progress.Done != 30 {
		t.Fatalf("downstream of a running job: %+v, %v", j, err)
	}
}

// TestInputJobKeepsUpstream: a finished job whose outputs an unfinished
// job runs on cannot be deleted, and another token cannot name it.
func TestInputJobKeepsUpstream(t *testing.T) {
	cl := startAuthCluster(t, t.TempDir(), cluster.WorkerSpec{Threads: 1, NoWasm: true})
	ctx := testCtx(t)
	alice, _ := makeToken(t, cl.Client, api.RoleSubmit, "")
	bob, _ := makeToken(t, cl.Client, api.RoleSubmit, "")
	in := put(t, alice, []byte("x"))
	up := runJob(t, alice, api.JobSpec{Op: "noop", Inputs: []string{in, in}})
	if up.State != api.JobDone {
		t.Fatalf("%+v", up)
	}
	_, err := bob.Submit(ctx, api.JobSpec{Op: "noop", InputJob: up.ID})
	wantCode(t, "naming another token's job", err, api.CodeNotFound)
	addOp(t, alice, wasmtest.Module(), api.OperationSpec{Name: "nothing"}) // no worker runs it: the job waits
	down, err := alice.Submit(ctx, api.JobSpec{Op: "nothing", InputJob: up.ID})
	if err != nil {
		t.Fatal(err)
	}
	err = alice.DeleteJob(ctx, up.ID)
	if apiCode(err) != api.CodeConflict || !strings.Contains(err.Error(), down.ID) {
		t.Fatalf("deleting the upstream of a waiting job: %v, want a conflict naming %s", err, down.ID)
	}
	if _, err := alice.Cancel(ctx, down.ID); err != nil {
		t.Fatal(err)
	}
	if err := alice.DeleteJob(ctx, up.ID); err != nil {
		t.Fatalf("deleting the upstream once its downstream is cancelled: %v", err)
	}
}
