package server_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/userop/wasmtest"
)

// addOp uploads module and registers it as name.
func addOp(t *testing.T, c *client.Client, module []byte, spec api.OperationSpec) api.Operation {
	t.Helper()
	spec.Module = put(t, c, module)
	op, err := c.AddOperation(testCtx(t), spec)
	if err != nil {
		t.Fatalf("registering %s: %v", spec.Name, err)
	}
	return op
}

// TestUserOpVersions: registering a name again makes a new version only
// when something changed; a job pins the version it was submitted with,
// and its parameters, through a restart of the server and after the name
// is removed. (The module echoes its input and arguments.)
func TestUserOpVersions(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	echo := wasmtest.EchoArgs()
	spec := api.OperationSpec{Name: "echo", Params: []api.Parameter{{Name: "lower", Type: "bool", Default: "false"}}}
	v1 := addOp(t, cl.Client, echo, spec)
	if again := addOp(t, cl.Client, echo, spec); again.Version != 1 || v1.Version != 1 || v1.Kind != api.OpWasm {
		t.Fatalf("versions %d, %d; want 1 twice", v1.Version, again.Version)
	}
	in := put(t, cl.Client, []byte("one Two two"))
	// No worker yet: the job waits, pinned to version 1.
	pending, err := cl.Client.Submit(ctx, api.JobSpec{Op: "echo", Input: in, Params: map[string]string{"lower": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if pending.Spec.OpVersion != 1 || pending.Spec.OpDigest != v1.Digest {
		t.Fatalf("job spec %+v does not pin version 1", pending.Spec)
	}
	spec.Summary = "changed"
	if v2 := addOp(t, cl.Client, echo, spec); v2.Version != 2 {
		t.Fatalf("a changed registration made version %d, want 2", v2.Version)
	}
	if err := cl.Client.RemoveOperation(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	_, err = cl.Client.Submit(ctx, api.JobSpec{Op: "echo", Input: in})
	if code := apiCode(err); code != api.CodeUnknownOp {
		t.Fatalf("a removed operation took a job: %v", err)
	}
	if err := cl.Client.DeleteObject(ctx, v1.Digest); err != nil {
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeConflict || !strings.Contains(ae.Message, "the operation module of") {
			t.Fatalf("deleting the module of a waiting job: %v, want a conflict naming the job", err)
		}
	} else {
		t.Fatal("the module of a waiting job was deleted")
	}
	cl = restartWithWorkers(t, cl, dir)
	j, err := cl.Client.Wait(ctx, pending.ID, nil)
	if err != nil || j.State != api.JobDone {
		t.Fatalf("the job of a removed operation after a restart: %+v, %v", j, err)
	}
	out, err := cl.Client.GetBytes(ctx, j.Result)
	if err != nil || string(out) != "one Two two"+"echo\n--lower=true\n" {
		t.Fatalf("result %q, %v", out, err)
	}
	list, err := cl.Client.Operations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range list {
		if op.Name == "echo" {
			t.Fatalf("a removed operation is listed: %+v", op)
		}
	}
}

// TestUserOpRejections: bad registrations and jobs get clear 4xx answers.
func TestUserOpRejections(t *testing.T) {
	cl := startCluster(t)
	ctx := testCtx(t)
	c := cl.Client
	text := put(t, c, []byte("#!/bin/sh\n"))
	for _, tc := range []struct {
		spec       api.OperationSpec
		code, want string
	}{
		{api.OperationSpec{Name: "x", Module: text}, api.CodeBadModule, "not a WebAssembly module"},
		{api.OperationSpec{Name: "x", Module: strings.Repeat("0", 64)}, api.CodeNoObject, "does not exist"},
		{api.OperationSpec{Name: "x", Module: "nope"}, api.CodeBadRequest, "not an object id"},
		{api.OperationSpec{Name: "sobel", Module: text}, api.CodeBadParameter, "built-in"},
		{api.OperationSpec{Name: "x", Module: put(t, c, wasmtest.Module()), ABI: api.ABIReactor}, api.CodeBadModule, "braid_run"},
	} {
		_, err := c.AddOperation(ctx, tc.spec)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != tc.code || !strings.Contains(ae.Message, tc.want) {
			t.Errorf("%+v: %v, want %s saying %q", tc.spec, err, tc.code, tc.want)
		}
	}
	op := addOp(t, c, wasmtest.Module(), api.OperationSpec{Name: "nothing"})
	in := put(t, c, []byte("x"))
	for _, tc := range []struct {
		spec api.JobSpec
		want string
	}{
		{api.JobSpec{Op: "nothing", Input: in, Params: map[string]string{"k": "v"}}, `unknown parameter "k" (known: none)`},
		{api.JobSpec{Op: "nothing", Input: in, OpVersion: 7}, "has no version 7"},
		{api.JobSpec{Op: "nothing", Input: in, OpDigest: strings.Repeat("a", 64)}, "not " + strings.Repeat("a", 64)},
		{api.JobSpec{Op: "nothing", Input: in, Tiles: "2x2"}, "registered without a reach"},
		{api.JobSpec{Op: "nothing", Input: in, UnitTimeoutMS: -1}, "unit timeout"},
		{api.JobSpec{Op: "blur", Input: in, UnitTimeoutMS: 5}, "for user operations"},
	} {
		if _, err := c.Submit(ctx, tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", tc.spec, err, tc.want)
		}
	}
	// Workers alone fetch code, with the worker token, and only modules
	// of operations.
	for _, tc := range []struct {
		c      *client.Client
		digest string
		status string
	}{
		{c, op.Digest, api.CodeUnauthorized},
		{c.WithSecret([]byte("wrong")), op.Digest, api.CodeUnauthorized},
		{c.WithSecret(cluster.DefaultSecret), in, api.CodeNotFound},
	} {
		if _, err := tc.c.Code(ctx, tc.digest); apiCode(err) != tc.status {
			t.Errorf("code %s: %v, want %s", tc.digest[:8], err, tc.status)
		}
	}
	code, err := c.WithSecret(cluster.DefaultSecret).Code(ctx, op.Digest)
	if err != nil || !bytes.Equal(code, wasmtest.Module()) {
		t.Fatalf("a worker's fetch: %d bytes, %v", len(code), err)
	}
}

// TestUserOpWaitsForWasmWorker: a job of a user operation waits, saying
// why, while only workers started without WebAssembly (or scripts, or
// the network for scripts) are up.
func TestUserOpWaitsForWasmWorker(t *testing.T) {
	ctx := testCtx(t)
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: t.TempDir(), Workers: []cluster.WorkerSpec{{Name: "plain", Threads: 1, NoWasm: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	addOp(t, cl.Client, wasmtest.Module(), api.OperationSpec{Name: "nothing"})
	addOp(t, cl.Client, []byte("cat\n"), api.OperationSpec{Name: "cat", ABI: api.ABIExec, Interpreter: "sh"})
	addOp(t, cl.Client, []byte("wget -qO- \"$1\"\n"), api.OperationSpec{Name: "fetch", ABI: api.ABIExec, Interpreter: "sh", Limits: api.OpLimits{Network: true}})
	in := put(t, cl.Client, []byte("x"))
	waitForReason(t, cl.Client, api.JobSpec{Op: "nothing", Input: in},
		`no registered worker can run operation "WebAssembly user operations" (workers run WebAssembly unless started with --no-wasm)`)
	waitForReason(t, cl.Client, api.JobSpec{Op: "cat", Input: in},
		`operation "sh scripts" (only workers started with --allow-exec sh run sh scripts)`)
	waitForReason(t, cl.Client, api.JobSpec{Op: "nothing,cat", Input: in},
		`operation "sh scripts and WebAssembly user operations" (only workers started with --allow-exec sh run sh scripts; workers run WebAssembly unless started with --no-wasm)`)
	waitForReason(t, cl.Client, api.JobSpec{Op: "fetch", Input: in},
		`operation "sh scripts with network" (only workers started with --allow-exec sh --exec-network run sh scripts that use the network)`)
}

// waitForReason submits spec and waits until the job says it waits for want.
func waitForReason(t *testing.T, c *client.Client, spec api.JobSpec, want string) {
	t.Helper()
	ctx := testCtx(t)
	j, err := c.Submit(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(j.Waiting, want) {
		if time.Now().After(deadline) {
			t.Fatalf("job %+v does not say why it waits", j)
		}
		time.Sleep(20 * time.Millisecond)
		if j, err = c.Job(ctx, j.ID, false); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUserOpOwnership: only the token that registered an operation (or an
// admin) registers a new version of it or removes it; a removed version
// cannot be pinned by a new job; a pipeline's modules cannot be deleted
// while it waits.
func TestUserOpOwnership(t *testing.T) {
	cl := startAuthCluster(t, t.TempDir())
	ctx := testCtx(t)
	alice, _ := makeToken(t, cl.Client, api.RoleSubmit, "")
	bob, _ := makeToken(t, cl.Client, api.RoleSubmit, "")
	v1 := addOp(t, alice, wasmtest.Module(), api.OperationSpec{Name: "mine"})
	_, err := bob.AddOperation(ctx, api.OperationSpec{Name: "mine", Module: put(t, bob, wasmtest.Module(wasmtest.Trap...))})
	wantCode(t, "another token's new version", err, api.CodeForbidden)
	wantCode(t, "another token's removal", bob.RemoveOperation(ctx, "mine"), api.CodeForbidden)
	in := put(t, alice, []byte("x"))
	pending, err := alice.Submit(ctx, api.JobSpec{Op: "noop,mine", Input: in})
	if err != nil {
		t.Fatal(err)
	}
	if err := alice.RemoveOperation(ctx, "mine"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Client.DeleteObject(ctx, v1.Digest); apiCode(err) != api.CodeConflict {
		t.Errorf("deleting the module of a waiting pipeline: %v, want a conflict", err)
	}
	addOp(t, bob, wasmtest.Module(), api.OperationSpec{Name: "mine", Summary: "bob's now"})
	_, err = bob.Submit(ctx, api.JobSpec{Op: "mine", Input: in, OpVersion: 1})
	if err == nil || !strings.Contains(err.Error(), "version 1 was removed") {
		t.Errorf("pinning a removed version: %v", err)
	}
	if _, err := cl.Client.Cancel(ctx, pending.ID); err != nil {
		t.Fatal(err)
	}
}
