package netem

import (
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestInNSKeepsThread: the thread InNS ran f on goes back to this
// process's namespace and lives on, so that a child process started from
// it earlier (PR_SET_PDEATHSIG is per thread) is not killed when InNS
// ends; f itself ran in the named namespace.
func TestInNSKeepsThread(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("needs root: %v", err)
	}
	const ns = "braid-nstest"
	if err := ip("netns", "add", ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = removeNS(ns) })
	home, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		var tid int
		var inside string
		if err := InNS(ns, func() error {
			tid = unix.Gettid()
			inside, err = os.Readlink("/proc/thread-self/ns/net")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if inside == home {
			t.Fatalf("f ran in this process's namespace %s, not %s's", home, ns)
		}
		task := fmt.Sprintf("/proc/self/task/%d/ns/net", tid)
		for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			got, err := os.Readlink(task)
			if err != nil {
				t.Fatalf("thread %d is gone after InNS: %v", tid, err)
			}
			if got != home {
				t.Fatalf("thread %d is in %s after InNS, want this process's %s", tid, got, home)
			}
		}
	}
}
