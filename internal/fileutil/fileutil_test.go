package fileutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteSynced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key.pem")
	if err := WriteSynced(path, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteSynced(path, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if err != nil || string(b) != "second" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%q, %v, mode %v", b, err, fi.Mode())
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left behind: %v", err)
	}
	if err := WriteSynced(filepath.Join(t.TempDir(), "no", "dir"), []byte("x"), 0o600); err == nil {
		t.Error("a file in a missing directory was written")
	}
}
