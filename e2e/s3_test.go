package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/testport"
	"github.com/braidhq/braid/ops/samples"
	"github.com/braidhq/braid/store/s3/s3test"
)

const s3Store = "s3://braidbkt/objs"

// startS3Server starts a server on addr with its state in dir and its
// objects in the gateway's bucket.
func startS3Server(t *testing.T, addr, dir string, extra ...string) (*proc, *client.Client) {
	t.Helper()
	args := append([]string{"server", "--listen", addr, "--data", dir, "--store", s3Store, "--heartbeat-timeout", "2s"}, extra...)
	srv := start(t, args...)
	return srv, connect(t, srv, dir)
}

// TestS3Store is the S3 store's whole path, against versitygw over a
// directory: a tiled blur job runs with --store s3://braidbkt/objs; every
// object's bytes are in the bucket and none under --data; after kill -9
// and a restart the objects are served; a second server on the bucket,
// with a data directory of its own, serves objects it never received.
func TestS3Store(t *testing.T) {
	gw := s3test.Start(t, "braidbkt", "otherbkt")
	addr, dir := testport.Addr(t), t.TempDir()
	srv, c := startS3Server(t, addr, dir)
	start(t, "worker", "--server", c.URL(), "--threads", "2", "--name", "w1")
	waitWorkersUp(t, c, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	in, err := c.Put(ctx, bytes.NewReader(samples.PNG()))
	if err != nil {
		t.Fatal(err)
	}
	j, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: in.ID, Tiles: "3x3", Params: map[string]string{"sigma": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	done, err := c.Wait(ctx, j.ID, nil)
	if err != nil || done.State != api.JobDone || done.Progress.Done != 9 {
		t.Fatalf("the tiled blur job: %+v, %v", done, err)
	}
	result, err := c.GetBytes(ctx, done.Result)
	if err != nil || len(result) == 0 {
		t.Fatalf("its result: %d bytes, %v", len(result), err)
	}

	objs, err := c.Objects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) < 3 { // the input, tile outputs, the result
		t.Fatalf("objects listed: %v", objs)
	}
	inBucket := map[string]bool{}
	for _, o := range objs {
		b, err := os.ReadFile(filepath.Join(gw.Root, "braidbkt", "objs", "objects", o.ID))
		if err != nil {
			t.Fatalf("object %s is not in the bucket: %v", o.ID, err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != o.ID {
			t.Fatalf("the bucket's copy of %s has other bytes", o.ID)
		}
		inBucket[o.ID] = true
	}
	noObjectUnder(t, dir, inBucket)

	// An object already in a bucket: the server reads it, the client does
	// not; an input list may name such objects too.
	if out := strings.TrimSpace(cli(t, c, "put", "--from", "s3://braidbkt/objs/objects/"+in.ID)); out != in.ID {
		t.Fatalf("braid put --from: %q, want %s", out, in.ID)
	}
	// Only from buckets the operator allowed: the server's credentials may
	// read more than its clients should.
	_, err = c.Import(ctx, "s3://otherbkt/secret")
	var refused *api.Error
	if !errors.As(err, &refused) || refused.Code != api.CodeForbidden || !strings.Contains(refused.Message, "--s3-import") {
		t.Fatalf("put --from a bucket not allowed: %v, want 403 naming --s3-import", err)
	}
	list := filepath.Join(t.TempDir(), "inputs")
	if err := os.WriteFile(list, []byte("# from the bucket\ns3://braidbkt/objs/objects/"+in.ID+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	listJob := strings.TrimSpace(cli(t, c, "submit", "--op", "blur", "--input-list", list, "--param", "sigma=1", "--wait"))
	if lj, err := c.Job(ctx, strings.Fields(listJob)[0], false); err != nil || lj.State != api.JobDone {
		t.Fatalf("a job over an input list of s3:// lines (%q): %+v, %v", listJob, lj, err)
	}

	kill9(t, srv)
	_, c = startS3Server(t, addr, dir)
	for _, id := range []string{in.ID, done.Result} {
		if b, err := c.GetBytes(ctx, id); err != nil || (id == done.Result && !bytes.Equal(b, result)) {
			t.Fatalf("object %s after kill -9 and a restart: %d bytes, %v", id, len(b), err)
		}
	}
	if again, err := c.Job(ctx, j.ID, false); err != nil || again.Result != done.Result {
		t.Fatalf("the job after the restart: %+v, %v", again, err)
	}

	dir2 := t.TempDir()
	_, c2 := startS3Server(t, "127.0.0.1:0", dir2)
	got, err := c2.GetBytes(ctx, done.Result)
	if err != nil || !bytes.Equal(got, result) {
		t.Fatalf("a second server on the bucket serving the first's result: %d bytes, %v", len(got), err)
	}
	saved := filepath.Join(t.TempDir(), "in.png")
	cli(t, c2, "get", in.ID, "-o", saved)
	if b, err := os.ReadFile(saved); err != nil || !bytes.Equal(b, samples.PNG()) {
		t.Fatalf("braid get of the first server's input from the second: %d bytes, %v", len(b), err)
	}
	noObjectUnder(t, dir2, inBucket)
}

// noObjectUnder fails if a file under dir holds the bytes of an object.
func noObjectUnder(t *testing.T, dir string, ids map[string]bool) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if sum := sha256.Sum256(b); ids[hex.EncodeToString(sum[:])] {
			t.Errorf("%s under --data holds object %x", p, sum)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestS3KilledMidJob: the S3 server killed with SIGKILL in the middle of
// a job fails the job, uploads meanwhile get 503 naming the endpoint (no
// 500, no hang); once the S3 server is back, uploads and jobs work again.
func TestS3KilledMidJob(t *testing.T) {
	gw := s3test.Start(t, "braidbkt")
	_, c := startS3Server(t, "127.0.0.1:0", t.TempDir())
	start(t, "worker", "--server", c.URL(), "--threads", "2", "--name", "w1")
	waitWorkersUp(t, c, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	in, err := c.Put(ctx, bytes.NewReader(samples.GIF()))
	if err != nil {
		t.Fatal(err)
	}
	const units = 3000
	j, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: in.ID, Repeat: units, Params: map[string]string{"sigma": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, ctx, c, j.ID, 20)
	gw.Kill()
	final, err := c.Wait(ctx, j.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	switch final.State {
	case api.JobFailed:
		if !strings.Contains(final.Error, gw.Endpoint) {
			t.Errorf("the job failed without naming the S3 endpoint: %q", final.Error)
		}
	case api.JobDone:
		t.Logf("the job's last units were stored before the kill: done")
	default:
		t.Fatalf("the job after the S3 server died: %s %q", final.State, final.Error)
	}
	start := time.Now()
	_, err = c.Put(ctx, bytes.NewReader([]byte("while S3 is down")))
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeUnavailable || !strings.Contains(ae.Message, gw.Endpoint) {
		t.Fatalf("an upload with S3 down: %v, want 503 unavailable naming %s", err, gw.Endpoint)
	}
	t.Logf("upload refused after %v: %s", time.Since(start).Round(time.Millisecond), ae.Message)

	gw.Restart(t)
	obj, err := c.Put(ctx, bytes.NewReader([]byte("after S3 is back")))
	if err != nil {
		t.Fatalf("an upload once S3 is back: %v", err)
	}
	if b, err := c.GetBytes(ctx, obj.ID); err != nil || string(b) != "after S3 is back" {
		t.Fatalf("reading it: %q, %v", b, err)
	}
	j2, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: in.ID, Repeat: 10, Params: map[string]string{"sigma": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if done, err := c.Wait(ctx, j2.ID, nil); err != nil || done.State != api.JobDone {
		t.Fatalf("a job once S3 is back: %+v, %v", done, err)
	}
}
