package server

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// A data directory's secret is made once, private, and read back after.
func TestDataDirSecret(t *testing.T) {
	dir := t.TempDir()
	first, err := dataDirSecret(dir)
	if err != nil || len(first) != 48 {
		t.Fatalf("made %q, %v; want 48 hex digits", first, err)
	}
	fi, err := os.Stat(filepath.Join(dir, SecretFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secret file: %v, %v; want mode 0600", fi.Mode(), err)
	}
	again, err := dataDirSecret(dir)
	if err != nil || !bytes.Equal(again, first) {
		t.Errorf("read back %q, %v; want %q", again, err, first)
	}
}
