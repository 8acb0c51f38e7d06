// Package storetest is the conformance suite every store.Store
// implementation passes (store/local, store/s3, store/cache): content
// addresses, write-then-publish, the lease rule of store's Collection, the
// errors, counting, and concurrent use.
//
// An implementation's test calls Run with a Space maker:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Space {
//			dir := t.TempDir()
//			return func(t *testing.T, cfg store.Config) store.Store {
//				s, err := local.Open(dir, cfg)
//				...
//			}
//		})
//	}
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/store"
)

// Space opens a store over one empty place for objects (a directory, a
// bucket prefix). Calling it again opens the same objects anew, as a
// restarted server would; the suite closes every store it opens.
type Space func(t *testing.T, cfg store.Config) store.Store

// LeaseResolution is how coarse a store's lease times may be: S3 keeps
// whole seconds. The suite waits this long (and a little) where it needs an
// object's lease to be strictly before a cutoff.
const LeaseResolution = time.Second

// Run runs every conformance test; newSpace makes an empty Space for each.
func Run(t *testing.T, newSpace func(t *testing.T) Space) {
	tests := []struct {
		name string
		fn   func(*testing.T, Space)
	}{
		{"PutGet", testPutGet},
		{"Large", testLarge},
		{"TooLarge", testTooLarge},
		{"BadIDs", testBadIDs},
		{"FailedPutLeavesNothing", testFailedPut},
		{"Refresh", testRefresh},
		{"TouchEvery", testTouchEvery},
		{"Usage", testUsage},
		{"Reopen", testReopen},
		{"ConcurrentWriters", testConcurrentWriters},
		{"RefreshRacesRemoval", testRefreshRacesRemoval},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newSpace(t)) })
	}
}

var ctx = context.Background()

func open(t *testing.T, sp Space, cfg store.Config) store.Store {
	t.Helper()
	s := sp(t, cfg)
	t.Cleanup(func() { s.Close() })
	return s
}

func idOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func mustPut(t *testing.T, s store.Store, b []byte) store.Info {
	t.Helper()
	info, err := s.PutBytes(ctx, b)
	if err != nil {
		t.Fatalf("PutBytes: %v", err)
	}
	return info
}

func wantBytes(t *testing.T, s store.Store, id string, want []byte) {
	t.Helper()
	got, err := store.ReadAll(ctx, s, id, int64(len(want))+1)
	if err != nil {
		t.Fatalf("ReadAll(%s): %v", id[:8], err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("ReadAll(%s): %d bytes, not the %d stored", id[:8], len(got), len(want))
	}
}

// waitPast returns once the clock has passed every lease taken before it
// was called by more than LeaseResolution, and the time to use as cutoff.
func waitPast(t *testing.T) time.Time {
	t.Helper()
	until := time.Now().Add(LeaseResolution + 100*time.Millisecond)
	time.Sleep(time.Until(until)) // the clock itself is the condition
	return time.Now()
}

func testPutGet(t *testing.T, sp Space) {
	s := open(t, sp, store.Config{})
	body := []byte("hello braid")
	info, err := s.Put(ctx, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if info.ID != idOf(body) || info.Size != int64(len(body)) || info.Existing {
		t.Fatalf("Put = %+v; want id %s, %d bytes, not existing", info, idOf(body), len(body))
	}
	wantBytes(t, s, info.ID, body)
	r, oi, err := s.Open(ctx, info.ID)
	if err != nil || oi.ID != info.ID || oi.Size != info.Size {
		t.Fatalf("Open = %+v, %v", oi, err)
	}
	r.Close()
	if st, err := s.Stat(ctx, info.ID); err != nil || st.Size != info.Size || st.Created.IsZero() {
		t.Fatalf("Stat = %+v, %v", st, err)
	}
	again, err := s.PutBytes(ctx, body)
	if err != nil || again.ID != info.ID || !again.Existing {
		t.Fatalf("PutBytes of the same bytes = %+v, %v; want the same id, existing", again, err)
	}
	third, err := s.Put(ctx, bytes.NewReader(body))
	if err != nil || third.ID != info.ID || !third.Existing {
		t.Fatalf("Put again = %+v, %v; want the same id, existing", third, err)
	}
	other := mustPut(t, s, []byte("other"))
	if other.Existing {
		t.Fatalf("PutBytes of new bytes = %+v; want not existing", other)
	}
	empty, err := s.Put(ctx, strings.NewReader(""))
	if err != nil || empty.ID != idOf(nil) || empty.Size != 0 {
		t.Fatalf("Put of nothing = %+v, %v", empty, err)
	}
	wantBytes(t, s, empty.ID, nil)
	list, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(list))
	for i, o := range list {
		ids[i] = o.ID
	}
	want := []string{info.ID, other.ID, empty.ID}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("List = %v, want %v (sorted)", ids, want)
	}
}

// testLarge stores objects around and past an S3 store's single-request
// limit in tests (5 MiB, its part size), through readers that are not
// seekable.
func testLarge(t *testing.T, sp Space) {
	s := open(t, sp, store.Config{})
	sizes := []int{5 << 20, 5<<20 + 1, 10 << 20, 13<<20 + 7}
	for _, size := range sizes {
		body := make([]byte, size)
		rand.Read(body)
		info, err := s.Put(ctx, io.MultiReader(bytes.NewReader(body[:1<<20]), bytes.NewReader(body[1<<20:])))
		if err != nil {
			t.Fatalf("Put of %d bytes: %v", size, err)
		}
		if info.ID != idOf(body) || info.Size != int64(len(body)) {
			t.Fatalf("Put of %d bytes = %+v", size, info)
		}
		wantBytes(t, s, info.ID, body)
		again, err := s.Put(ctx, bytes.NewReader(body))
		if err != nil || !again.Existing {
			t.Fatalf("Put of %d bytes again = %+v, %v; want existing", size, again, err)
		}
	}
	if list, err := s.List(ctx); err != nil || len(list) != len(sizes) {
		t.Fatalf("List = %+v, %v; want the %d objects (no temporary ones)", list, err, len(sizes))
	}
}

func testTooLarge(t *testing.T, sp Space) {
	s := open(t, sp, store.Config{MaxSize: 10})
	if s.MaxSize() != 10 {
		t.Fatalf("MaxSize = %d", s.MaxSize())
	}
	if _, err := s.Put(ctx, strings.NewReader("0123456789abc")); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("Put over the limit: %v, want ErrTooLarge", err)
	}
	if _, err := s.PutBytes(ctx, []byte("0123456789abc")); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("PutBytes over the limit: %v, want ErrTooLarge", err)
	}
	if list, _ := s.List(ctx); len(list) != 0 {
		t.Fatalf("an object over the limit was stored: %v", list)
	}
	if _, err := s.Put(ctx, strings.NewReader("0123456789")); err != nil {
		t.Fatalf("exactly at the limit: %v", err)
	}
	info := mustPut(t, s, []byte("abc"))
	if _, err := store.ReadAll(ctx, s, info.ID, 2); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("ReadAll over its limit: %v, want ErrTooLarge", err)
	}
}

func testBadIDs(t *testing.T, sp Space) {
	s := open(t, sp, store.Config{})
	for _, id := range []string{"", "../../etc/passwd", strings.Repeat("A", 64), strings.Repeat("0", 63), strings.Repeat("0", 63) + "/"} {
		if _, err := s.Stat(ctx, id); !errors.Is(err, store.ErrInvalidID) {
			t.Errorf("Stat(%q) = %v", id, err)
		}
		if _, _, err := s.Open(ctx, id); !errors.Is(err, store.ErrInvalidID) {
			t.Errorf("Open(%q) = %v", id, err)
		}
		if _, err := s.Touch(ctx, id); !errors.Is(err, store.ErrInvalidID) {
			t.Errorf("Touch(%q) = %v", id, err)
		}
		if err := s.Remove(ctx, id); !errors.Is(err, store.ErrInvalidID) {
			t.Errorf("Remove(%q) = %v", id, err)
		}
		if _, err := s.RemoveIfOlder(ctx, id, time.Now()); !errors.Is(err, store.ErrInvalidID) {
			t.Errorf("RemoveIfOlder(%q) = %v", id, err)
		}
	}
	missing := strings.Repeat("0", 64)
	if _, _, err := s.Open(ctx, missing); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Open of a missing object: %v", err)
	}
	if _, err := s.Stat(ctx, missing); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Stat of a missing object: %v", err)
	}
	if _, err := s.Touch(ctx, missing); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Touch of a missing object: %v", err)
	}
	if err := s.Remove(ctx, missing); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Remove of a missing object: %v", err)
	}
	if ok, err := s.RemoveIfOlder(ctx, missing, time.Now()); ok || err != nil {
		t.Errorf("RemoveIfOlder of a missing object = %v, %v; want false, nil", ok, err)
	}
}

// failingReader yields n bytes, then fails.
type failingReader struct{ n int }

var errCut = errors.New("storetest: body cut")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errCut
	}
	n := min(len(p), f.n)
	clear(p[:n])
	f.n -= n
	return n, nil
}

// testFailedPut: a Put whose reader fails, or whose context ends, mid-way
// publishes nothing; the store works on.
func testFailedPut(t *testing.T, sp Space) {
	s := open(t, sp, store.Config{})
	for _, n := range []int{100, 11 << 20} {
		if _, err := s.Put(ctx, &failingReader{n: n}); !errors.Is(err, errCut) {
			t.Fatalf("Put of a body cut after %d bytes: %v, want the reader's error", n, err)
		}
		if _, err := s.Stat(ctx, idOf(make([]byte, n))); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the %d bytes read before the cut were published: %v", n, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	go func() {
		pw.Write(make([]byte, 1000))
		cancel()
		pw.Write(make([]byte, 1000)) // the store may have stopped reading
	}()
	if _, err := s.Put(cctx, pr); err == nil {
		t.Fatal("Put whose context ended mid-way succeeded")
	}
	pr.Close()
	if list, err := s.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("List after failed Puts = %+v, %v; want nothing", list, err)
	}
	wantBytes(t, s, mustPut(t, s, []byte("after")).ID, []byte("after"))
}

// testRefresh: storing an existing object again, or touching it, moves its
// lease past a cutoff taken before, so RemoveIfOlder keeps it; an object
// not refreshed since the cutoff goes.
func testRefresh(t *testing.T, sp Space) {
	s := open(t, sp, store.Config{})
	ids := map[string]string{}
	for _, name := range []string{"PutBytes", "Put", "Touch", "untouched"} {
		ids[name] = mustPut(t, s, []byte(name)).ID
	}
	cutoff := waitPast(t)
	mustPut(t, s, []byte("PutBytes"))
	if _, err := s.Put(ctx, strings.NewReader("Put")); err != nil {
		t.Fatal(err)
	}
	touched, err := s.Touch(ctx, ids["Touch"])
	if err != nil || touched.Size != int64(len("Touch")) || touched.Created.Before(cutoff.Add(-LeaseResolution)) {
		t.Fatalf("Touch = %+v, %v", touched, err)
	}
	if ok, err := s.RemoveIfOlder(ctx, ids["Put"], cutoff.Add(-time.Hour)); ok || err != nil {
		t.Fatalf("RemoveIfOlder with a cutoff an hour back = %v, %v; want kept", ok, err)
	}
	for name, id := range ids {
		removed, err := s.RemoveIfOlder(ctx, id, cutoff)
		if err != nil {
			t.Fatal(err)
		}
		if want := name == "untouched"; removed != want {
			t.Errorf("%s: removed %v, want %v", name, removed, want)
		}
	}
	if _, err := s.Stat(ctx, ids["untouched"]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Stat of a removed object: %v, want ErrNotFound", err)
	}
	if _, err := s.Touch(ctx, ids["untouched"]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Touch of a removed object: %v, want ErrNotFound", err)
	}
	if err := s.Remove(ctx, ids["untouched"]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Remove of a removed object: %v, want ErrNotFound", err)
	}
	if err := s.Remove(ctx, ids["Touch"]); err != nil {
		t.Errorf("Remove: %v", err)
	}
	if _, _, err := s.Open(ctx, ids["Touch"]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Open of a removed object: %v, want ErrNotFound", err)
	}
}

// testTouchEvery: an object this store refreshed less than TouchEvery ago
// is not refreshed again, and a removal forgets that, so the next write
// stores anew.
func testTouchEvery(t *testing.T, sp Space) {
	s := open(t, sp, store.Config{TouchEvery: time.Hour})
	body := []byte("the same output, again and again")
	first := mustPut(t, s, body)
	cutoff := waitPast(t)
	if again := mustPut(t, s, body); !again.Existing {
		t.Fatalf("PutBytes again = %+v; want existing", again)
	}
	if _, err := s.Touch(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.RemoveIfOlder(ctx, first.ID, cutoff); !ok || err != nil {
		t.Fatalf("RemoveIfOlder after refreshes within TouchEvery = %v, %v; want removed (not refreshed)", ok, err)
	}
	if again := mustPut(t, s, body); again.Existing {
		t.Fatalf("PutBytes after the removal = %+v; want stored anew", again)
	}
	wantBytes(t, s, first.ID, body)
}

func testUsage(t *testing.T, sp Space) {
	s := open(t, sp, store.Config{})
	want := func(s store.Store, objects, size int64) {
		t.Helper()
		if o, b := s.Usage(); o != objects || b != size {
			t.Fatalf("Usage = %d objects, %d bytes; want %d, %d", o, b, objects, size)
		}
	}
	want(s, 0, 0)
	a, err := s.Put(ctx, strings.NewReader("aaaa"))
	if err != nil {
		t.Fatal(err)
	}
	b := mustPut(t, s, []byte("bbbbbbbbbb"))
	mustPut(t, s, []byte("aaaa"))
	want(s, 2, 14)
	if err := s.Remove(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, a.ID); err == nil {
		t.Fatal("second Remove succeeded")
	}
	want(s, 1, 10)
	s.Close()
	reopened := open(t, sp, store.Config{})
	want(reopened, 1, 10)
	if ok, err := reopened.RemoveIfOlder(ctx, b.ID, time.Now().Add(time.Hour)); !ok || err != nil {
		t.Fatalf("RemoveIfOlder = %v, %v", ok, err)
	}
	want(reopened, 0, 0)
}

// testReopen: objects outlive the store that wrote them.
func testReopen(t *testing.T, sp Space) {
	s := open(t, sp, store.Config{})
	body := []byte("kept across a restart")
	info := mustPut(t, s, body)
	s.Close()
	s2 := open(t, sp, store.Config{})
	wantBytes(t, s2, info.ID, body)
	if st, err := s2.Stat(ctx, info.ID); err != nil || st.Size != int64(len(body)) {
		t.Fatalf("Stat after reopening = %+v, %v", st, err)
	}
}

// testConcurrentWriters: many goroutines storing the same and different
// bytes at once all get the right ids, and every object reads back.
func testConcurrentWriters(t *testing.T, sp Space) {
	s := open(t, sp, store.Config{})
	const writers, each = 8, 6
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				body := []byte(fmt.Sprintf("object %d", i))
				if i%2 == 1 {
					body = []byte(fmt.Sprintf("writer %d object %d", w, i))
				}
				var info store.Info
				var err error
				if i%3 == 0 {
					info, err = s.Put(ctx, bytes.NewReader(body))
				} else {
					info, err = s.PutBytes(ctx, body)
				}
				if err == nil && info.ID != idOf(body) {
					err = fmt.Errorf("id %s for %q", info.ID, body)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != each/2+writers*each/2 {
		t.Fatalf("List = %d objects, %v; want %d", len(list), err, each/2+writers*each/2)
	}
	for _, o := range list {
		if _, err := store.ReadAll(ctx, s, o.ID, 1<<10); err != nil {
			t.Fatal(err)
		}
	}
}

// testRefreshRacesRemoval: a removal and a refresh of the same old object
// at once end with the object there, whichever came first: a writer never
// returns an id whose object is gone.
func testRefreshRacesRemoval(t *testing.T, sp Space) {
	s := open(t, sp, store.Config{})
	const n = 12
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = []byte(fmt.Sprintf("raced object %d", i))
		mustPut(t, s, bodies[i])
	}
	cutoff := waitPast(t)
	var wg sync.WaitGroup
	for i, body := range bodies {
		wg.Go(func() {
			if _, err := s.RemoveIfOlder(ctx, idOf(body), cutoff); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			var err error
			if i%2 == 0 {
				_, err = s.PutBytes(ctx, body)
			} else if _, err = s.Touch(ctx, idOf(body)); errors.Is(err, store.ErrNotFound) {
				return // the removal came first: the touch must say so, and did
			}
			if err != nil {
				t.Error(err)
				return
			}
			wantBytes(t, s, idOf(body), body)
		})
	}
	wg.Wait()
}
