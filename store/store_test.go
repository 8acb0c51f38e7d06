package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPutGet(t *testing.T) {
	s, err := Open(t.TempDir(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("hello braid")
	info, err := s.Put(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if info.ID != hex.EncodeToString(sum[:]) || info.Size != int64(len(body)) {
		t.Fatalf("info = %+v", info)
	}
	got, err := s.ReadAll(info.ID, 1<<20)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
	if info.Existing {
		t.Errorf("first Put says the object existed: %+v", info)
	}
	again, err := s.PutBytes(body)
	if err != nil || again.ID != info.ID || !again.Existing {
		t.Fatalf("PutBytes = %+v, %v; want the same id, existing", again, err)
	}
	third, err := s.Put(bytes.NewReader(body))
	if err != nil || third.ID != info.ID || !third.Existing {
		t.Fatalf("Put again = %+v, %v; want the same id, existing", third, err)
	}
	if other, err := s.PutBytes([]byte("other")); err != nil || other.Existing {
		t.Fatalf("PutBytes of new bytes = %+v, %v; want not existing", other, err)
	}
	list, err := s.List()
	if err != nil || len(list) != 2 || !slices.ContainsFunc(list, func(i Info) bool { return i.ID == info.ID }) {
		t.Fatalf("List = %+v, %v", list, err)
	}
}

func TestTooLargeLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, Config{MaxSize: 10})
	_, err := s.Put(strings.NewReader("0123456789abc"))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(ents) != 0 {
		t.Fatalf("tmp not cleaned: %v", ents)
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Fatalf("object stored: %v", list)
	}
	if _, err := s.Put(strings.NewReader("0123456789")); err != nil {
		t.Fatalf("exactly at limit: %v", err)
	}
}

func TestBadIDs(t *testing.T) {
	s, _ := Open(t.TempDir(), Config{})
	for _, id := range []string{"", "../../etc/passwd", strings.Repeat("A", 64), strings.Repeat("0", 63)} {
		if _, err := s.Stat(id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Stat(%q) = %v", id, err)
		}
	}
	if _, err := s.Open(strings.Repeat("0", 64)); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing object: %v", err)
	}
}

// watchSyncs records the directories syncDir is called on.
func watchSyncs(t *testing.T) *[]string {
	t.Helper()
	var synced []string
	orig := syncDir
	syncDir = func(dir string) error {
		synced = append(synced, dir)
		return orig(dir)
	}
	t.Cleanup(func() { syncDir = orig })
	return &synced
}

// TestRenameIsSynced: every path that renames an object into place
// fsyncs the fan-out directory afterwards, and the objects directory when
// the fan-out directory is new, so a power cut cannot lose an object that
// state.db already names.
func TestRenameIsSynced(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	synced := watchSyncs(t)
	objects := filepath.Join(dir, "objects")
	puts := map[string]func([]byte) (Info, error){
		"Put":      func(b []byte) (Info, error) { return s.Put(bytes.NewReader(b)) },
		"PutBytes": s.PutBytes,
	}
	for name, put := range puts {
		*synced = nil
		info, err := put([]byte("first object via " + name))
		if err != nil {
			t.Fatal(err)
		}
		fanout := filepath.Join(objects, info.ID[:2])
		if want := []string{objects, fanout}; !slices.Equal(*synced, want) {
			t.Errorf("%s into a new fan-out directory synced %v, want %v", name, *synced, want)
		}
		// Another object in the same fan-out directory: only that one.
		var second Info
		for i := 0; ; i++ {
			b := []byte(fmt.Sprintf("%s %d", name, i))
			if sum := sha256.Sum256(b); hex.EncodeToString(sum[:1]) == info.ID[:2] {
				*synced = nil
				if second, err = put(b); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		if want := []string{fanout}; !slices.Equal(*synced, want) {
			t.Errorf("%s of %s synced %v, want %v", name, second.ID, *synced, want)
		}
		// The same bytes again: nothing is renamed, nothing to sync.
		*synced = nil
		if _, err := put([]byte("first object via " + name)); err != nil {
			t.Fatal(err)
		}
		if len(*synced) != 0 {
			t.Errorf("%s of an existing object synced %v", name, *synced)
		}
	}
}

// TestRewriteRefreshes: storing an existing object again (or touching it)
// moves its modification time forward, so RemoveIfOlder with an earlier
// cutoff keeps it; an object not refreshed since the cutoff goes.
func TestRewriteRefreshes(t *testing.T) {
	s, _ := Open(t.TempDir(), Config{})
	old := time.Now().Add(-time.Hour)
	ids := map[string]string{}
	for _, name := range []string{"PutBytes", "Put", "Touch", "untouched"} {
		info, err := s.PutBytes([]byte(name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(s.path(info.ID), time.Time{}, old); err != nil {
			t.Fatal(err)
		}
		ids[name] = info.ID
	}
	cutoff := time.Now().Add(-time.Minute)
	if _, err := s.PutBytes([]byte("PutBytes")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(strings.NewReader("Put")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Touch(ids["Touch"]); err != nil {
		t.Fatal(err)
	}
	for name, id := range ids {
		removed, err := s.RemoveIfOlder(id, cutoff)
		if err != nil {
			t.Fatal(err)
		}
		if want := name == "untouched"; removed != want {
			t.Errorf("%s: removed %v, want %v", name, removed, want)
		}
	}
	if _, err := s.Touch(ids["untouched"]); !errors.Is(err, ErrNotFound) {
		t.Errorf("Touch of a removed object: %v, want ErrNotFound", err)
	}
	if err := s.Remove(ids["untouched"]); !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove of a removed object: %v, want ErrNotFound", err)
	}
	if err := s.Remove(ids["Touch"]); err != nil {
		t.Errorf("Remove: %v", err)
	}
}

// TestTouchEvery: an object this store refreshed less than TouchEvery ago
// is not refreshed again (no system call for the many units that write the
// same bytes), and a removal forgets that, so the next write stores anew.
func TestTouchEvery(t *testing.T) {
	s, _ := Open(t.TempDir(), Config{TouchEvery: time.Hour})
	body := []byte("the same output, again and again")
	first, err := s.PutBytes(body)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(s.path(first.ID), time.Time{}, old); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBytes(body); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(s.path(first.ID)); !fi.ModTime().Equal(old) {
		t.Errorf("refreshed within TouchEvery: mtime %v, want %v", fi.ModTime(), old)
	}
	if err := s.Remove(first.ID); err != nil {
		t.Fatal(err)
	}
	again, err := s.PutBytes(body)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.ReadAll(again.ID, 1<<10); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("written again after a removal: %q %v", got, err)
	}
}
