package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/braidhq/braid/cluster"
)

// A server start that fails, on a busy port or a data directory another
// server holds, creates no secret and no admin token there.
func TestFailedServerStartCreatesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	data := filepath.Join(t.TempDir(), "braid-data")
	code, _, stderr := runCmd(t, "server", "--listen", ln.Addr().String(), "--data", data)
	if code != 1 || !strings.Contains(stderr, "address already in use") {
		t.Errorf("busy port: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(data)
		t.Errorf("busy port: %s was made, holding %v; want nothing created", data, entries)
	}

	held := t.TempDir()
	cl, err := cluster.Start(t.Context(), cluster.Config{DataDir: held, Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := os.Remove(filepath.Join(held, "admin.token")); err != nil { // the first server's; the second must make none
		t.Fatal(err)
	}
	code, _, stderr = runCmd(t, "server", "--listen", "127.0.0.1:0", "--data", held)
	if code != 1 || !strings.Contains(stderr, "is another server using this --data dir?") {
		t.Errorf("held data directory: exit %d, stderr %q", code, stderr)
	}
	for _, name := range []string{"secret", "admin.token"} {
		if _, err := os.Stat(filepath.Join(held, name)); !os.IsNotExist(err) {
			t.Errorf("held data directory: %s was made (%v)", name, err)
		}
	}
}
