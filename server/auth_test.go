package server_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/ops/samples"
)

// startAuthCluster runs a cluster whose server checks tokens; its Client
// shows the first admin token.
func startAuthCluster(t *testing.T, dir string, workers ...cluster.WorkerSpec) *cluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: dir, Workers: workers, Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func makeToken(t *testing.T, admin *client.Client, role, ttl string) (*client.Client, api.Token) {
	t.Helper()
	tok, err := admin.CreateToken(testCtx(t), api.TokenSpec{Role: role, Name: role + " test", ExpiresIn: ttl})
	if err != nil {
		t.Fatalf("create %s token: %v", role, err)
	}
	if !strings.HasPrefix(tok.Token, "braid_"+tok.ID+"_") || tok.Role != role {
		t.Fatalf("token answer %+v", tok)
	}
	return admin.WithToken(tok.Token), tok
}

func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := apiCode(err); got != code {
		t.Errorf("%s: error %v (code %q), want code %q", what, err, got, code)
	}
}

// TestTokensGuardEveryEndpoint: without a token, with a wrong one, or with
// one below the call's role, a call is refused and changes nothing;
// /healthz stays open, and workers get units by the cluster secret alone.
func TestTokensGuardEveryEndpoint(t *testing.T) {
	dir := t.TempDir()
	cl := startAuthCluster(t, dir, cluster.WorkerSpec{Threads: 2})
	ctx := testCtx(t)
	admin := cl.Client

	fi, err := os.Stat(filepath.Join(dir, api.AdminTokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file: %v, mode %v; want 0600", err, fi.Mode())
	}

	anon := admin.WithToken("")
	in := put(t, admin, []byte("some bytes"))
	objsBefore, err := admin.Objects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = anon.Jobs(ctx)
	wantCode(t, "list jobs without a token", err, api.CodeUnauthorized)
	_, err = anon.Put(ctx, strings.NewReader("anonymous"))
	wantCode(t, "upload without a token", err, api.CodeUnauthorized)
	_, err = admin.WithToken("braid_000000000000_00").Jobs(ctx)
	wantCode(t, "unknown token", err, api.CodeUnauthorized)
	_, err = admin.WithToken("not a token").Jobs(ctx)
	wantCode(t, "malformed token", err, api.CodeUnauthorized)
	objs, err := admin.Objects(ctx)
	if err != nil || len(objs) != len(objsBefore) {
		t.Fatalf("objects after refused uploads: %v, %v; want %v", objs, err, objsBefore)
	}

	for _, path := range []string{"/metrics", "/v1/openapi.json", "/v1/workers", "/v1/tokens"} {
		resp, err := http.Get(admin.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("GET %s without a token: %s, WWW-Authenticate %q", path, resp.Status, resp.Header.Get("WWW-Authenticate"))
		}
	}
	resp, err := http.Get(admin.URL() + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz without a token: %v, %v", resp, err)
	}
	resp.Body.Close()

	reader, _ := makeToken(t, admin, api.RoleRead, "")
	submitter, _ := makeToken(t, admin, api.RoleSubmit, "")
	_, err = reader.Submit(ctx, api.JobSpec{Op: "noop", Input: in})
	wantCode(t, "read token submits", err, api.CodeForbidden)
	_, err = reader.Put(ctx, strings.NewReader("x"))
	wantCode(t, "read token uploads", err, api.CodeForbidden)
	_, err = submitter.CreateToken(ctx, api.TokenSpec{Role: api.RoleAdmin})
	wantCode(t, "submit token makes a token", err, api.CodeForbidden)
	_, err = submitter.Tokens(ctx)
	wantCode(t, "submit token lists tokens", err, api.CodeForbidden)

	// The worker registered with the cluster secret and runs a submit
	// token's job.
	j := runJob(t, submitter, api.JobSpec{Op: "noop", Input: in, Repeat: 3})
	if j.State != api.JobDone || j.Progress.Done != 3 {
		t.Fatalf("job of a submit token: %+v", j)
	}
	if _, err := reader.Job(ctx, j.ID, false); err != nil {
		t.Errorf("read token reads a job: %v", err)
	}
	if ws, err := reader.Workers(ctx); err != nil || len(ws) != 1 {
		t.Errorf("read token lists workers: %v, %v", ws, err)
	}
}

// TestSubmitTokensSeeTheirOwnJobs: a submit token lists, reads, waits for,
// cancels and deletes only its own jobs (another's answers not_found), and
// deletes only objects it uploaded; admins see all.
func TestSubmitTokensSeeTheirOwnJobs(t *testing.T) {
	cl := startAuthCluster(t, t.TempDir()) // no workers: jobs stay queued
	ctx := testCtx(t)
	admin := cl.Client
	alice, at := makeToken(t, admin, api.RoleSubmit, "")
	bob, _ := makeToken(t, admin, api.RoleSubmit, "")

	in := put(t, alice, []byte("alice's input"))
	aj, err := alice.Submit(ctx, api.JobSpec{Op: "noop", Input: in, Repeat: 2})
	if err != nil {
		t.Fatal(err)
	}
	if aj.Owner != at.ID {
		t.Errorf("job owner %q, want alice's token %s", aj.Owner, at.ID)
	}
	bj, err := bob.Submit(ctx, api.JobSpec{Op: "noop", Input: in})
	if err != nil {
		t.Fatalf("bob submits on alice's object: %v", err)
	}

	if js, err := bob.Jobs(ctx); err != nil || len(js) != 1 || js[0].ID != bj.ID {
		t.Errorf("bob's job list: %v, %v; want only %s", js, err, bj.ID)
	}
	if js, err := admin.Jobs(ctx); err != nil || len(js) != 2 {
		t.Errorf("admin's job list: %v, %v; want both jobs", js, err)
	}
	_, err = bob.Job(ctx, aj.ID, false)
	wantCode(t, "bob reads alice's job", err, api.CodeNotFound)
	_, err = bob.Cancel(ctx, aj.ID)
	wantCode(t, "bob cancels alice's job", err, api.CodeNotFound)
	err = bob.DeleteJob(ctx, aj.ID)
	wantCode(t, "bob deletes alice's job", err, api.CodeNotFound)
	err = bob.DeleteObject(ctx, in)
	wantCode(t, "bob deletes alice's object", err, api.CodeForbidden)
	if j, err := alice.Job(ctx, aj.ID, false); err != nil || j.State != api.JobQueued {
		t.Fatalf("alice's job after bob's tries: %+v, %v", j, err)
	}

	if j, err := alice.Cancel(ctx, aj.ID); err != nil || j.State != api.JobCancelled {
		t.Fatalf("alice cancels her job: %+v, %v", j, err)
	}
	if _, err := admin.Cancel(ctx, bj.ID); err != nil {
		t.Fatalf("admin cancels bob's job: %v", err)
	}
	if err := alice.DeleteObject(ctx, in); err != nil {
		t.Fatalf("alice deletes her object: %v", err)
	}
}

// TestTokenLifecycle: revoked and expired tokens stop working, the last
// admin token cannot be revoked, tokens outlive a restart, and state.db
// holds no secret.
func TestTokenLifecycle(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: dir, Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	admin := cl.Client

	sub, st := makeToken(t, admin, api.RoleSubmit, "")
	short, _ := makeToken(t, admin, api.RoleRead, "1s")
	if _, err := sub.Jobs(ctx); err != nil {
		t.Fatalf("new token: %v", err)
	}
	_, err = admin.CreateToken(ctx, api.TokenSpec{Role: "root"})
	wantCode(t, "unknown role", err, api.CodeBadParameter)
	_, err = admin.CreateToken(ctx, api.TokenSpec{Role: api.RoleRead, ExpiresIn: "-5m"})
	wantCode(t, "negative lifetime", err, api.CodeBadParameter)
	_, err = admin.CreateToken(ctx, api.TokenSpec{Role: api.RoleRead, Name: "bell\a"})
	wantCode(t, "control character in a name", err, api.CodeBadParameter)

	if err := admin.RevokeToken(ctx, st.ID); err != nil {
		t.Fatal(err)
	}
	_, err = sub.Jobs(ctx)
	wantCode(t, "revoked token", err, api.CodeUnauthorized)
	wantCode(t, "revoking it again", admin.RevokeToken(ctx, st.ID), api.CodeNotFound)

	toks, err := admin.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var first api.Token
	for _, tk := range toks {
		if tk.Token != "" {
			t.Errorf("token list shows a secret: %+v", tk)
		}
		if tk.Role == api.RoleAdmin {
			first = tk
		}
	}
	wantCode(t, "revoking the last admin token", admin.RevokeToken(ctx, first.ID), api.CodeConflict)

	second, secondTok := makeToken(t, admin, api.RoleAdmin, "")
	if err := second.RevokeToken(ctx, first.ID); err != nil {
		t.Fatalf("revoking the first admin token once there is another: %v", err)
	}
	_, err = admin.Jobs(ctx)
	wantCode(t, "revoked first admin token", err, api.CodeUnauthorized)

	time.Sleep(1100 * time.Millisecond)
	_, err = short.Jobs(ctx)
	wantCode(t, "expired token", err, api.CodeUnauthorized)

	// A restart keeps the second admin token, and makes no new one.
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, api.AdminTokenFile))
	cl, err = cluster.Start(ctx, cluster.Config{DataDir: dir, Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, api.AdminTokenFile))
	if !bytes.Equal(before, after) {
		t.Error("a restart with an admin token rewrote the admin token file")
	}
	if _, err := cl.Client.Jobs(ctx); apiCode(err) != api.CodeUnauthorized {
		t.Errorf("revoked first admin token after a restart: %v", err)
	}
	if _, err := client.New(cl.Server.URL()).WithToken(secondTok.Token).Tokens(ctx); err != nil {
		t.Errorf("second admin token after a restart: %v", err)
	}
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}

	// Only hashes on disk.
	db, err := bolt.Open(filepath.Join(dir, "state.db"), 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	secretOf := func(tok string) string { return tok[strings.LastIndex(tok, "_")+1:] }
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if bytes.Contains(v, []byte(secretOf(strings.TrimSpace(string(before))))) {
					t.Errorf("bucket %s key %s holds the admin token's secret", name, k)
				}
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUploadDoesNotOwnWhatExists: uploading bytes that are already stored
// (another token's job result) makes the uploader no owner of them, so it
// cannot delete them.
func TestUploadDoesNotOwnWhatExists(t *testing.T) {
	cl := startAuthCluster(t, t.TempDir(), cluster.WorkerSpec{Threads: 1})
	ctx := testCtx(t)
	alice, _ := makeToken(t, cl.Client, api.RoleSubmit, "")
	bob, _ := makeToken(t, cl.Client, api.RoleSubmit, "")
	j := runJob(t, alice, api.JobSpec{Op: "grayscale", Input: put(t, alice, samples.GIF())})
	if j.State != api.JobDone {
		t.Fatalf("alice's job: %+v", j)
	}
	res, err := bob.GetBytes(ctx, j.Result) // objects are shared for reading
	if err != nil {
		t.Fatal(err)
	}
	obj, err := bob.Put(ctx, bytes.NewReader(res))
	if err != nil || !obj.Existing || obj.Owner != "" {
		t.Fatalf("bob uploads alice's result again: %+v, %v; want existing, no owner", obj, err)
	}
	wantCode(t, "bob deletes alice's result", bob.DeleteObject(ctx, j.Result), api.CodeForbidden)
	if _, err := alice.GetBytes(ctx, j.Result); err != nil {
		t.Errorf("alice's result after bob's try: %v", err)
	}
}

// TestTokenCallsWithoutAuth: a server that checks no tokens answers the
// token calls with a clear conflict, not a broken connection.
func TestTokenCallsWithoutAuth(t *testing.T) {
	cl := startCluster(t)
	ctx := testCtx(t)
	_, err := cl.Client.CreateToken(ctx, api.TokenSpec{Role: api.RoleRead})
	wantCode(t, "create a token", err, api.CodeConflict)
	_, err = cl.Client.Tokens(ctx)
	wantCode(t, "list tokens", err, api.CodeConflict)
	wantCode(t, "revoke a token", cl.Client.RevokeToken(ctx, "0123456789ab"), api.CodeConflict)
}
