package netem

import (
	"errors"
	"os/exec"
	"testing"
	"time"
)

// TestLeftoversRemoved: what a killed owner left — the namespaces and a
// process still inside one — is removed by the next Up, and Close leaves
// nothing.
func TestLeftoversRemoved(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("emulator tests skipped: %v", err)
	}
	lock, err := takeLock(DefaultStateDir)
	for deadline := time.Now().Add(5 * time.Minute); errors.Is(err, ErrBusy) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond) // another package's test has the bed
		lock, err = takeLock(DefaultStateDir)
	}
	if errors.Is(err, ErrBusy) {
		t.Skipf("emulator tests skipped: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	// The leftovers, made while holding the lock as their owner did.
	for _, ns := range []string{NSA, NSB} {
		if err := removeNS(ns); err != nil {
			t.Fatal(err)
		}
		if err := ip("netns", "add", ns); err != nil {
			t.Fatal(err)
		}
	}
	orphan := exec.Command("ip", "netns", "exec", NSA, "sleep", "60")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- orphan.Wait() }()
	// ip enters the namespace after it starts: on a busy machine Up could
	// otherwise look before the orphan is there to be found.
	for deadline := time.Now().Add(10 * time.Second); len(nsPids(NSA)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			orphan.Process.Kill()
			t.Fatal("the orphan never showed up in braid-a")
		}
	}
	lock.Close()

	b := upBed(t, "rtt=2ms")
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		orphan.Process.Kill()
		t.Fatal("the process left in braid-a still runs after Up")
	}
	if len(b.Paths()) != 1 || !Exists() {
		t.Fatalf("bed not up: %+v", b.Paths())
	}
}
