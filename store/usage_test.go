package store

import (
	"bytes"
	"testing"
	"time"
)

// TestUsage checks the object and byte counts through writes, rewrites,
// removals and a reopen.
func TestUsage(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := func(s *Store, objects, size int64) {
		t.Helper()
		if o, b := s.Usage(); o != objects || b != size {
			t.Fatalf("Usage = %d objects, %d bytes; want %d, %d", o, b, objects, size)
		}
	}
	want(s, 0, 0)
	a, err := s.Put(bytes.NewReader([]byte("aaaa")))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.PutBytes([]byte("bbbbbbbbbb"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBytes([]byte("aaaa")); err != nil { // already stored
		t.Fatal(err)
	}
	want(s, 2, 14)
	if err := s.Remove(a.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(a.ID); err == nil {
		t.Fatal("second Remove succeeded")
	}
	want(s, 1, 10)
	reopened, err := Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	want(reopened, 1, 10)
	if ok, err := reopened.RemoveIfOlder(b.ID, time.Now().Add(time.Hour)); !ok || err != nil {
		t.Fatalf("RemoveIfOlder = %v, %v", ok, err)
	}
	want(reopened, 0, 0)
}
