package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPutGet(t *testing.T) {
	s, err := Open(t.TempDir(), 0)
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
	again, err := s.PutBytes(body)
	if err != nil || again.ID != info.ID {
		t.Fatalf("PutBytes = %+v, %v", again, err)
	}
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].ID != info.ID {
		t.Fatalf("List = %+v, %v", list, err)
	}
}

func TestTooLargeLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, 10)
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
	s, _ := Open(t.TempDir(), 0)
	for _, id := range []string{"", "../../etc/passwd", strings.Repeat("A", 64), strings.Repeat("0", 63)} {
		if _, err := s.Stat(id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Stat(%q) = %v", id, err)
		}
	}
	if _, err := s.Open(strings.Repeat("0", 64)); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing object: %v", err)
	}
}
