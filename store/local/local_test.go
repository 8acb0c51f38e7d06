package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/store"
	"github.com/braidhq/braid/store/storetest"
)

var ctx = context.Background()

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Space {
		dir := t.TempDir()
		return func(t *testing.T, cfg store.Config) store.Store {
			s, err := Open(dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}

// TestTooLargeLeavesNoTemporaryFile: the temporary file of a refused
// upload is removed at once, not at the next Open.
func TestTooLargeLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, store.Config{MaxSize: 10})
	if _, err := s.Put(ctx, strings.NewReader("0123456789abc")); err == nil {
		t.Fatal("Put over the limit succeeded")
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(ents) != 0 {
		t.Fatalf("tmp not cleaned: %v", ents)
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
	s, err := Open(dir, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	synced := watchSyncs(t)
	objects := filepath.Join(dir, "objects")
	puts := map[string]func([]byte) (Info, error){
		"Put":      func(b []byte) (Info, error) { return s.Put(ctx, bytes.NewReader(b)) },
		"PutBytes": func(b []byte) (Info, error) { return s.PutBytes(ctx, b) },
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

// TestTouchEveryCostsNoSystemCall: a refresh within TouchEvery leaves the
// file's modification time alone.
func TestTouchEveryCostsNoSystemCall(t *testing.T) {
	s, _ := Open(t.TempDir(), store.Config{TouchEvery: time.Hour})
	body := []byte("the same output, again and again")
	first, err := s.PutBytes(ctx, body)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(s.path(first.ID), time.Time{}, old); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBytes(ctx, body); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(s.path(first.ID)); !fi.ModTime().Equal(old) {
		t.Errorf("refreshed within TouchEvery: mtime %v, want %v", fi.ModTime(), old)
	}
}
