// Package wasmtest builds WebAssembly modules for tests with the Go
// toolchain's wasip1 port or clang with wasi-libc, and assembles tiny
// hand-written ones.
package wasmtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	built = map[string][]byte{}
)

// Build compiles the Go package pkg (an import path inside braid's
// module, e.g. "./examples/ops/wordcount", relative to the module root)
// for GOOS=wasip1 GOARCH=wasm, as a reactor (-buildmode=c-shared) when
// reactor is set, and returns the module. Builds are shared by the tests
// of one process.
func Build(t testing.TB, pkg string, reactor bool) []byte {
	t.Helper()
	key := pkg
	if reactor {
		key += " reactor"
	}
	mu.Lock()
	defer mu.Unlock()
	if b, ok := built[key]; ok {
		return b
	}
	dir, err := os.MkdirTemp("", "wasmtest")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "m.wasm")
	args := []string{"build", "-o", out}
	if reactor {
		args = append(args, "-buildmode=c-shared")
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = Root(t)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s for wasip1: %v\n%s", pkg, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	built[key] = b
	return b
}

// BuildC compiles the C program src (a path relative to the module root)
// into a command module with clang and wasi-libc, as `make examples` does
// (mk/wasi-c.sh). Without them (Debian's clang, lld, wasi-libc and
// libclang-rt-dev-wasm32; `make test-deps` installs them as root) it skips
// the test, saying what to install.
func BuildC(t testing.TB, src string) []byte {
	t.Helper()
	key := "c " + src
	mu.Lock()
	defer mu.Unlock()
	if b, ok := built[key]; ok {
		return b
	}
	dir, err := os.MkdirTemp("", "wasmtest")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "m.wasm")
	cmd := exec.Command("sh", "mk/wasi-c.sh", "build", out, src)
	cmd.Dir = Root(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if e, ok := err.(*exec.ExitError); ok && e.ExitCode() == 3 {
		t.Skipf("SKIPPED, NOT TESTED: %s", bytes.TrimSpace(stderr.Bytes()))
	}
	if err != nil {
		t.Fatalf("building %s: %v\n%s", src, err, stderr.Bytes())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	built[key] = b
	return b
}

// Root is the module's root directory.
func Root(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Module assembles a module whose only function is _start(), with one
// page of memory (exported as "memory"), whose body is the given
// instructions (without the final end).
func Module(body ...byte) []byte {
	code := append([]byte{0x00}, body...) // no locals
	code = append(code, 0x0b)
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = section(m, 1, []byte{1, 0x60, 0, 0})                      // type: func() ()
	m = section(m, 3, []byte{1, 0})                               // func 0 has type 0
	m = section(m, 5, []byte{1, 0, 1})                            // memory: min 1 page
	exports := append(append([]byte{2}, name("_start")...), 0, 0) // _start: func 0
	exports = append(append(exports, name("memory")...), 2, 0)    // memory: memory 0
	m = section(m, 7, exports)
	m = section(m, 10, append([]byte{1}, vec(code)...))
	return m
}

// BigFunction assembles a command module like Module's whose _start is
// one function of about size bytes of code: one i32 local added to over
// and over.
func BigFunction(size int) []byte {
	body := make([]byte, 0, size+16)
	body = append(body, 1, 1, 0x7f) // one i32 local
	for i := 0; len(body) < size; i++ {
		body = append(body, 0x20, 0x00, 0x41, byte(i%64), 0x6a, 0x21, 0x00) // local.get 0; i32.const; i32.add; local.set 0
	}
	body = append(body, 0x0b)
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = section(m, 1, []byte{1, 0x60, 0, 0})
	m = section(m, 3, []byte{1, 0})
	m = section(m, 5, []byte{1, 0, 1})
	exports := append(append([]byte{2}, name("_start")...), 0, 0)
	exports = append(append(exports, name("memory")...), 2, 0)
	m = section(m, 7, exports)
	return section(m, 10, append([]byte{1}, vec(body)...))
}

// Instructions for Module.
var (
	// Trap is unreachable.
	Trap = []byte{0x00}
	// Loop is loop br 0 end: forever.
	Loop = []byte{0x03, 0x40, 0x0c, 0x00, 0x0b}
	// Grow grows memory a page at a time until growing fails, then traps.
	Grow = []byte{0x03, 0x40, 0x41, 0x01, 0x40, 0x00, 0x41, 0x7f, 0x47, 0x0d, 0x00, 0x0b, 0x00}
)

func section(m []byte, id byte, body []byte) []byte {
	return append(append(m, id), vec(body)...)
}

func vec(b []byte) []byte { return append(uleb(len(b)), b...) }

func name(s string) []byte { return vec([]byte(s)) }

func uleb(n int) []byte {
	var out []byte
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}
