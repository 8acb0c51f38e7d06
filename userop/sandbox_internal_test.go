package userop

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
)

func name(s string) []byte { return append([]byte{byte(len(s))}, s...) }

// wasiImporter assembles a module importing one WASI function (of type 0)
// that exports function 1 (of type 1) as export, with one page of memory,
// the given body and data at offset 24.
func wasiImporter(types []byte, imp, export string, body, data []byte) []byte {
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, sec(1, append([]byte{2}, types...)...)...)
	m = append(m, sec(2, append(append(append([]byte{1}, name(wasiModule)...), name(imp)...), 0, 0)...)...)
	m = append(m, sec(3, 1, 1)...)
	m = append(m, sec(5, 1, 0, 1)...)
	m = append(m, sec(7, append(append([]byte{2}, name(export)...), 0, 1, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0)...)...)
	code := append([]byte{0}, body...)
	m = append(m, sec(10, append([]byte{1, byte(len(code) + 1)}, append(code, 0x0b)...)...)...)
	if data != nil {
		m = append(m, sec(11, append([]byte{1, 0, 0x41, 24, 0x0b, byte(len(data))}, data...)...)...)
	}
	return m
}

func runtimeOf(t *testing.T, m []byte) (*Runtime, [32]byte) {
	r, err := NewRuntime(Config{Fetch: func(context.Context, [32]byte) ([]byte, error) { return m, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, sha256.Sum256(m)
}

// TestSleepIsNotReal: a module that asks poll_oneoff to sleep an hour does
// not hold its worker thread: with the host's real sleep (which ignores
// the unit's time limit) the unit would not end for an hour.
func TestSleepIsNotReal(t *testing.T) {
	types := []byte{0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f, 0x60, 0, 0} // poll_oneoff; _start
	// poll_oneoff(subscriptions at 0, events at 64, 1, nevents at 128); drop
	body := []byte{0x41, 0, 0x41, 0xc0, 0, 0x41, 1, 0x41, 0x80, 1, 0x10, 0, 0x1a}
	hour := []byte{0x00, 0xa0, 0xb8, 0x30, 0x46, 0x03, 0x00, 0x00} // the clock subscription's timeout, 3600 s in ns
	r, d := runtimeOf(t, wasiImporter(types, "poll_oneoff", "_start", body, hour))
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(t.Context(), "sleep", d, NewInvocation(api.ABICommand, api.OpLimits{TimeoutMS: 500}, 0, nil), nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a unit that sleeps an hour still holds its thread 30 s later (its limit is 500 ms)")
	}
}

// TestReactorExitDiscarded: a reactor whose braid_run calls proc_exit(0)
// fails its unit, and the next unit gets a fresh instance that fails the
// same way, not a closed one that "succeeds" with nothing.
func TestReactorExitDiscarded(t *testing.T) {
	types := []byte{0x60, 1, 0x7f, 0, 0x60, 2, 0x7f, 0x7f, 1, 0x7f} // proc_exit; braid_run
	body := []byte{0x41, 0, 0x10, 0, 0x41, 0}                       // proc_exit(0); return 0
	r, d := runtimeOf(t, wasiImporter(types, "proc_exit", "braid_run", body, nil))
	for i := range 3 {
		_, err := r.Run(t.Context(), "exits", d, NewInvocation(api.ABIReactor, api.OpLimits{}, 0, nil), []byte("x"))
		if err == nil || !strings.Contains(err.Error(), "the reactor exited (status 0)") {
			t.Fatalf("unit %d: %v, want the reactor's exit as the unit's failure", i, err)
		}
	}
}
