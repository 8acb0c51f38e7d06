package chaos

import (
	"os"
	"path/filepath"
	"testing"
)

// lostPort reads only the last run of a log: a worker that once lost its
// port and then started is not restarted again.
func TestLostPort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w1.log")
	lost := "=== 2026-11-27T18:20:49Z start [worker --listen 127.0.0.1:37131]\n" +
		"braid worker: listen 127.0.0.1:37131: tcpn: listen tcp 127.0.0.1:37131: bind: address already in use\n"
	for _, c := range []struct {
		log  string
		want bool
	}{
		{"", false},
		{lost, true},
		{lost + "=== 2026-11-27T18:20:50Z start [worker --listen 127.0.0.1:40000]\nlevel=INFO msg=registered\n", false},
		{"=== 2026-11-27T18:20:50Z start [worker]\nlevel=INFO msg=\"worker stopped\"\n", false},
	} {
		if err := os.WriteFile(path, []byte(c.log), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := lostPort(path); got != c.want {
			t.Errorf("lostPort(%q) = %v, want %v", c.log, got, c.want)
		}
	}
	if lostPort(filepath.Join(t.TempDir(), "none.log")) {
		t.Error("lostPort of a missing log is true")
	}
}
