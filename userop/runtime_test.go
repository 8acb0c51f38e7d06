package userop_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/ops/samples"
	"github.com/braidhq/braid/userop"
	"github.com/braidhq/braid/userop/wasmtest"
)

// store is a fetcher over modules by digest that counts its fetches.
type store struct {
	mu      sync.Mutex
	mods    map[[32]byte][]byte
	fetches atomic.Int64
}

func (s *store) add(m []byte) [32]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mods == nil {
		s.mods = map[[32]byte][]byte{}
	}
	d := sha256.Sum256(m)
	s.mods[d] = m
	return d
}

func (s *store) fetch(_ context.Context, d [32]byte) ([]byte, error) {
	s.fetches.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.mods[d]
	if !ok {
		return nil, errors.New("no such module")
	}
	return m, nil
}

func newRuntime(t *testing.T, cfg userop.Config) *userop.Runtime {
	t.Helper()
	r, err := userop.NewRuntime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func inv(abi string, params map[string]string) userop.Invocation {
	i := userop.NewInvocation(abi, api.OpLimits{MemoryMiB: 64, TimeoutMS: 20_000}, 0, nil)
	for k, v := range params {
		i.Params[k] = v
	}
	return i
}

func TestCommandRuns(t *testing.T) {
	var st store
	d := st.add(wasmtest.Build(t, "./examples/ops/wordcount", false))
	r := newRuntime(t, userop.Config{Fetch: st.fetch})
	out, err := r.Run(t.Context(), "wordcount", d, inv(api.ABICommand, map[string]string{"lower": "true"}), []byte("The cat saw the dog. THE end"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "3 the\n") || !strings.Contains(string(out), "1 cat\n") {
		t.Fatalf("wordcount output:\n%s", out)
	}
	for range 3 {
		if _, err := r.Run(t.Context(), "wordcount", d, inv(api.ABICommand, nil), []byte("a b")); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.fetches.Load(); n != 1 {
		t.Fatalf("module fetched %d times, want once", n)
	}
}

func TestSandbox(t *testing.T) {
	var st store
	d := st.add(wasmtest.Build(t, "./userop/testdata/hostile", false))
	r := newRuntime(t, userop.Config{Fetch: st.fetch})
	run := func(mode string, l api.OpLimits, input string) (string, error) {
		i := userop.NewInvocation(api.ABICommand, l, 0, [][2]string{{"mode", mode}, {"x", "1"}})
		out, err := r.Run(t.Context(), "hostile", d, i, []byte(input))
		return string(out), err
	}
	// Modules expected to finish get room on a loaded machine (alloc's
	// garbage collections have taken longer than 2 s there); loop, which
	// must be stopped, gets 2 s.
	l := api.OpLimits{MemoryMiB: 64, TimeoutMS: 30_000, MaxOutput: 1 << 20}
	tight := l
	tight.TimeoutMS = 2000
	for _, c := range []struct{ mode, want string }{
		{"echo", "hello"},
		{"args", "hostile --mode=echo"},
		{"env", "0"},
		{"file", "true"},
	} {
		mode := c.mode
		got, err := run(mode, l, "hello")
		if c.mode == "args" {
			got, err = run("args", l, "")
			c.want = "hostile --mode=args --x=1"
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", mode, got, err, c.want)
		}
	}
	for _, c := range []struct {
		mode, want string
		limits     api.OpLimits
	}{
		{"loop", "ran past its time limit of 2s", tight},
		{"alloc", "memory limit is 64 MiB", l},
		{"spew", "output passed its limit of 1048576 bytes", l},
		{"fail", "exit status 3; stderr: no can do", l},
		{"panic", "exit status 2; stderr: panic: deliberate", l},
	} {
		_, err := run(c.mode, c.limits, "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.mode, err, c.want)
		}
	}
	if got, err := run("echo", l, "still fine"); err != nil || got != "still fine" {
		t.Fatalf("after the hostile runs: %q, %v", got, err)
	}
}

func TestHandWrittenModules(t *testing.T) {
	var st store
	r := newRuntime(t, userop.Config{Fetch: st.fetch})
	l := api.OpLimits{MemoryMiB: 2, TimeoutMS: 500}
	for _, c := range []struct {
		name string
		body []byte
		want string
	}{
		{"trap", wasmtest.Trap, "the module trapped: wasm error: unreachable"},
		{"loop", wasmtest.Loop, "ran past its time limit of 500ms"},
		{"grow", wasmtest.Grow, "the module trapped: wasm error: unreachable"},
	} {
		d := st.add(wasmtest.Module(c.body...))
		_, err := r.Run(t.Context(), c.name, d, userop.NewInvocation(api.ABICommand, l, 0, nil), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	d := st.add(wasmtest.Module())
	if _, err := r.Run(t.Context(), "empty", d, userop.NewInvocation(api.ABICommand, l, 0, nil), nil); err != nil {
		t.Fatalf("a module that does nothing: %v", err)
	}
}

func TestDigestChecked(t *testing.T) {
	m := wasmtest.Module()
	liar := func(context.Context, [32]byte) ([]byte, error) { return m, nil }
	r := newRuntime(t, userop.Config{Fetch: liar})
	_, err := r.Run(t.Context(), "x", [32]byte{1}, inv(api.ABICommand, nil), nil)
	if err == nil || !strings.Contains(err.Error(), "has another digest") {
		t.Fatalf("a module whose digest does not match ran: %v", err)
	}
}

func TestReactorKeepsInstances(t *testing.T) {
	var st store
	d := st.add(wasmtest.Build(t, "./examples/ops/echo", true))
	r := newRuntime(t, userop.Config{Fetch: st.fetch})
	for i := range 50 {
		want := "unit " + string(rune('a'+i%26))
		out, err := r.Run(t.Context(), "echo", d, inv(api.ABIReactor, map[string]string{"upper": "true"}), []byte(want))
		if err != nil || string(out) != strings.ToUpper(want) {
			t.Fatalf("unit %d: %q, %v", i, out, err)
		}
	}
	out, err := r.Run(t.Context(), "echo", d, inv(api.ABIReactor, map[string]string{"upper": "false"}), []byte("low"))
	if err != nil || string(out) != "low" {
		t.Fatalf("%q, %v", out, err)
	}
	// Concurrent units each get an instance of their own.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			in := strings.Repeat(string(rune('a'+i)), 1000+i)
			out, err := r.Run(t.Context(), "echo", d, inv(api.ABIReactor, nil), []byte(in))
			if err != nil || string(out) != in {
				t.Errorf("concurrent unit %d: %d bytes, %v", i, len(out), err)
			}
		})
	}
	wg.Wait()
}

func TestCompiledCodeCache(t *testing.T) {
	var st store
	d := st.add(wasmtest.Build(t, "./examples/ops/wordcount", false))
	dir := t.TempDir()
	first := func() time.Duration {
		r, err := userop.NewRuntime(userop.Config{Fetch: st.fetch, CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		start := time.Now()
		if _, err := r.Run(t.Context(), "wordcount", d, inv(api.ABICommand, nil), []byte("a")); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	cold, warm := first(), first()
	t.Logf("first unit: %v compiling, %v from the cache", cold, warm)
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("cache dir holds %d entries (%v), want one per module", len(entries), err)
	}
	// A cache bounded below one module's code keeps only the newest.
	d2 := st.add(wasmtest.Module())
	r, err := userop.NewRuntime(userop.Config{Fetch: st.fetch, CacheDir: dir, MaxCache: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Run(t.Context(), "empty", d2, inv(api.ABICommand, nil), nil); err != nil {
		t.Fatal(err)
	}
	entries, _ = os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != hexOf(d2) {
		t.Fatalf("after pruning the cache holds %v, want only the newest module", entries)
	}
}

func hexOf(d [32]byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 64)
	for i, b := range d {
		out[2*i], out[2*i+1] = digits[b>>4], digits[b&15]
	}
	return string(out)
}

// TestBlurExample: examples/ops/blur, braid's Gaussian blur compiled to
// WebAssembly, gives the built-in's bytes exactly.
func TestBlurExample(t *testing.T) {
	var st store
	d := st.add(wasmtest.Build(t, "./examples/ops/blur", false))
	r := newRuntime(t, userop.Config{Fetch: st.fetch})
	in := userop.NewInvocation(api.ABICommand, api.OpLimits{MemoryMiB: 512, TimeoutMS: 60_000}, 0, [][2]string{{"sigma", "1.5"}})
	got, err := r.Run(t.Context(), "blur", d, in, samples.GIF())
	if err != nil {
		t.Fatal(err)
	}
	want, err := ops.Run("blur", ops.Params{"sigma": "1.5"}, samples.GIF())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the WebAssembly blur gives %d bytes, not the built-in's %d", len(got), len(want))
	}
}
