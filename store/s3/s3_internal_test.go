package s3

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/braidhq/braid/store"
	"github.com/braidhq/braid/store/s3/s3test"
)

var bg = context.Background()

func openOn(t *testing.T, gw *s3test.Server, prefix, owner string, mod ...func(*Config)) *Store {
	t.Helper()
	cfg := Config{Bucket: "bkt", Prefix: prefix, Endpoint: gw.Endpoint, Owner: owner, PartSize: 5 << 20, Timeout: 5 * time.Second}
	for _, m := range mod {
		m(&cfg)
	}
	s, err := Open(bg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func idOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestOpenRefusesWithTheFix: a missing bucket, a wrong key and an endpoint
// that is down are refused at Open, each with what to do.
func TestOpenRefusesWithTheFix(t *testing.T) {
	gw := s3test.Start(t, "bkt")
	cases := []struct {
		name string
		cfg  Config
		env  func()
		want []string
	}{
		{"missing bucket", Config{Bucket: "nosuch", Endpoint: gw.Endpoint}, nil,
			[]string{`bucket "nosuch" does not exist at ` + gw.Endpoint, "create it"}},
		{"wrong secret", Config{Bucket: "bkt", Endpoint: gw.Endpoint}, func() { t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong") },
			[]string{"refused the credentials", "AWS_ACCESS_KEY_ID"}},
		{"unknown key", Config{Bucket: "bkt", Endpoint: gw.Endpoint}, func() { t.Setenv("AWS_ACCESS_KEY_ID", "nobody") },
			[]string{"refused the credentials"}},
		{"endpoint down", Config{Bucket: "bkt", Endpoint: "http://127.0.0.1:1", Timeout: 2 * time.Second}, nil,
			[]string{"http://127.0.0.1:1 does not answer", "--s3-endpoint"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s3test.Env(t, gw.Endpoint)
			if tc.env != nil {
				tc.env()
			}
			_, err := Open(bg, tc.cfg)
			if err == nil {
				t.Fatal("Open succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestEverythingUnderThePrefix: the bytes are in the bucket under the
// prefix, as files of the gateway's directory.
func TestEverythingUnderThePrefix(t *testing.T) {
	gw := s3test.Start(t, "bkt")
	s := openOn(t, gw, "braid/objs", "a")
	body := []byte("in the bucket")
	info, err := s.PutBytes(bg, body)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(gw.Root, "bkt", "braid", "objs", "objects", info.ID))
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("the object's file in the gateway: %q, %v", got, err)
	}
	if s.URL() != "s3://bkt/braid/objs" {
		t.Errorf("URL = %s", s.URL())
	}
}

// TestCrashLeftoversGoAtOpen: a multipart upload and a temporary object
// this owner left are removed when it opens again; another owner's
// uploads in progress are left alone.
func TestCrashLeftoversGoAtOpen(t *testing.T) {
	gw := s3test.Start(t, "bkt")
	a := openOn(t, gw, "p", "a")
	b := openOn(t, gw, "p", "b")
	upA, err := a.startUpload(bg, a.tmpPrefix()+"crashed")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := upA.sendPart(bg, 1, []byte("part")); err != nil {
		t.Fatal(err)
	}
	upB, err := b.startUpload(bg, b.tmpPrefix()+"live")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.putSmall(bg, a.tmpPrefix()+"completed", []byte("tmp"), false); err != nil {
		t.Fatal(err)
	}
	openOn(t, gw, "p", "a")
	out, err := a.api.ListMultipartUploads(bg, &awss3.ListMultipartUploadsInput{Bucket: aws.String("bkt"), Prefix: aws.String("p/tmp/")})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, u := range out.Uploads {
		left = append(left, aws.ToString(u.Key))
	}
	if len(left) != 1 || left[0] != upB.key {
		t.Errorf("uploads after a's restart: %v, want only b's %s", left, upB.key)
	}
	if tmps, _ := a.listPrefix(bg, a.tmpPrefix()); len(tmps) != 0 {
		t.Errorf("a's temporary objects after its restart: %v", tmps)
	}
}

// TestReadsRestoreFromTheTrash: an object a removal left in the trash (a
// crash between its steps, or a refresh that raced it) is still there for
// every read, and comes back under its key.
func TestReadsRestoreFromTheTrash(t *testing.T) {
	gw := s3test.Start(t, "bkt")
	s := openOn(t, gw, "p", "a")
	reads := map[string]func(id string) error{
		"Open": func(id string) error {
			_, err := store.ReadAll(bg, s, id, 1<<10)
			return err
		},
		"Stat":  func(id string) error { _, err := s.Stat(bg, id); return err },
		"Touch": func(id string) error { _, err := s.Touch(bg, id); return err },
	}
	for name, read := range reads {
		info, err := s.PutBytes(bg, []byte("trashed for "+name))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.copyKey(bg, s.objectKey(info.ID), s.trashKey(info.ID), info.Size); err != nil {
			t.Fatal(err)
		}
		if err := s.deleteKey(bg, s.objectKey(info.ID)); err != nil {
			t.Fatal(err)
		}
		if list, _ := s.List(bg); len(list) == 0 || !strings.Contains(fmt.Sprint(list), info.ID) {
			t.Errorf("%s: List without the trashed object: %v", name, list)
		}
		if err := read(info.ID); err != nil {
			t.Fatalf("%s of a trashed object: %v", name, err)
		}
		if _, err := s.head(bg, s.objectKey(info.ID)); err != nil {
			t.Errorf("%s did not restore the object: %v", name, err)
		}
	}
}

// TestRemovalAcrossServers: one server's collector removing old objects
// while another refreshes them ends with every refreshed object there, and
// only the others gone, whatever the interleaving.
func TestRemovalAcrossServers(t *testing.T) {
	gw := s3test.Start(t, "bkt")
	a := openOn(t, gw, "p", "a")
	b := openOn(t, gw, "p", "b")
	const n = 16
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = []byte(fmt.Sprintf("shared object %d", i))
		if _, err := a.PutBytes(bg, bodies[i]); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1100 * time.Millisecond) // past S3's one-second times
	cutoff := time.Now()
	var wg sync.WaitGroup
	kept := make([]bool, n)
	for i, body := range bodies {
		wg.Go(func() {
			if _, err := a.RemoveIfOlder(bg, idOf(body), cutoff); err != nil {
				t.Error(err)
			}
		})
		if i%4 == 3 {
			continue // not refreshed: must go
		}
		wg.Go(func() {
			var err error
			if i%2 == 0 {
				_, err = b.PutBytes(bg, body)
			} else if _, err = b.Touch(bg, idOf(body)); errors.Is(err, store.ErrNotFound) {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			kept[i] = true
		})
	}
	wg.Wait()
	for i, body := range bodies {
		_, err := b.Stat(bg, idOf(body))
		switch {
		case kept[i] && err != nil:
			t.Errorf("object %d: refreshed by b, then %v", i, err)
		case i%4 == 3 && !errors.Is(err, store.ErrNotFound):
			t.Errorf("object %d: not refreshed, yet %v", i, err)
		}
	}
}

// TestPublishedRefs: each owner reads the others' sets; a set that is not
// final and older than the bound is stale, a final one never.
func TestPublishedRefs(t *testing.T) {
	gw := s3test.Start(t, "bkt")
	a := openOn(t, gw, "p", "a", func(c *Config) { c.StaleAfter = time.Hour })
	b := openOn(t, gw, "p", "b")
	ids := [][32]byte{sha256.Sum256([]byte("x")), sha256.Sum256([]byte("y"))}
	if err := b.PublishRefs(bg, ids, false); err != nil {
		t.Fatal(err)
	}
	if err := a.PublishRefs(bg, [][32]byte{sha256.Sum256([]byte("a's own"))}, false); err != nil {
		t.Fatal(err)
	}
	var seen [][32]byte
	if err := a.OthersRefs(bg, func(id [32]byte) { seen = append(seen, id) }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != fmt.Sprint(ids) {
		t.Fatalf("a saw %x, want b's %x (and not its own)", seen, ids)
	}
	strict := openOn(t, gw, "p", "c", func(c *Config) { c.StaleAfter = time.Millisecond })
	time.Sleep(5 * time.Millisecond)
	err := strict.OthersRefs(bg, func([32]byte) {})
	if !errors.Is(err, store.ErrStaleRefs) || !strings.Contains(err.Error(), "s3://bkt/p/servers/") {
		t.Fatalf("a set older than the bound: %v, want ErrStaleRefs naming the key to delete", err)
	}
	for _, s := range []*Store{a, b} {
		if err := s.PublishRefs(bg, nil, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := strict.OthersRefs(bg, func([32]byte) {}); err != nil {
		t.Fatalf("final sets held collection back: %v", err)
	}
}

// slowReader yields size random bytes in chunks, calling at after each.
type slowReader struct {
	left  int
	chunk int
	at    func(sent int)
	sent  int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.chunk, r.left)
	rand.Read(p[:n])
	r.left -= n
	r.sent += n
	r.at(r.sent)
	return n, nil
}

// TestKilledMidUpload: the S3 server killed (SIGKILL) during a multipart
// upload fails the Put with ErrUnavailable naming the endpoint, in bounded
// time; after its restart nothing of the upload is visible, the next Open
// removes what it left, and uploads work again.
func TestKilledMidUpload(t *testing.T) {
	gw := s3test.Start(t, "bkt")
	s := openOn(t, gw, "p", "a")
	var once sync.Once
	r := &slowReader{left: 40 << 20, chunk: 1 << 20, at: func(sent int) {
		if sent >= 12<<20 {
			once.Do(gw.Kill)
		}
	}}
	start := time.Now()
	_, err := s.Put(bg, r)
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), gw.Endpoint) {
		t.Fatalf("Put with the S3 server killed under it: %v, want ErrUnavailable naming %s", err, gw.Endpoint)
	}
	t.Logf("failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	gw.Restart(t)
	s2 := openOn(t, gw, "p", "a")
	if list, err := s2.List(bg); err != nil || len(list) != 0 {
		t.Fatalf("objects after the killed upload: %v, %v", list, err)
	}
	out, err := s2.api.ListMultipartUploads(bg, &awss3.ListMultipartUploadsInput{Bucket: aws.String("bkt"), Prefix: aws.String("p/")})
	if err != nil || len(out.Uploads) != 0 {
		t.Fatalf("uploads left after the restart's Open: %v, %v", out.Uploads, err)
	}
	body := bytes.Repeat([]byte("back "), 3<<20)
	info, err := s2.Put(bg, bytes.NewReader(body))
	if err != nil || info.ID != idOf(body) {
		t.Fatalf("Put after the restart: %+v, %v", info, err)
	}
}

// TestKilledMidRead: a read whose S3 server dies fails with
// ErrUnavailable; once it is back the object reads whole.
func TestKilledMidRead(t *testing.T) {
	gw := s3test.Start(t, "bkt")
	s := openOn(t, gw, "p", "a")
	body := make([]byte, 24<<20)
	rand.Read(body)
	info, err := s.Put(bg, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	rc, _, err := s.Open(bg, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rc, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	gw.Kill()
	_, err = io.Copy(io.Discard, rc)
	rc.Close()
	// The kernel may have buffered the rest before the kill: then the
	// read completes, which is no failure either.
	if err != nil && (!errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), gw.Endpoint)) {
		t.Fatalf("read with the S3 server killed: %v, want ErrUnavailable naming %s", err, gw.Endpoint)
	}
	if _, err := s.Stat(bg, info.ID); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Stat with the S3 server down: %v, want ErrUnavailable", err)
	}
	gw.Restart(t)
	got, err := store.ReadAll(bg, s, info.ID, int64(len(body)))
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read after the restart: %d bytes, %v", len(got), err)
	}
}
