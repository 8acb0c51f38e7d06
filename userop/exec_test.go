//go:build linux

package userop_test

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/userop"
)

// TestExec runs scripts under sh and python3 as an exec operation's units
// do: input on stdin, output on stdout, parameters as arguments, an empty
// directory and environment, and each limit enforced by killing the
// script, whose failure is its unit's alone.
func TestExec(t *testing.T) {
	interp := map[string]string{}
	for _, p := range []string{"/bin/sh", "/usr/bin/python3"} { // not a pyenv shim in /root, which nobody cannot run
		if _, err := os.Stat(p); err == nil {
			interp[filepath.Base(p)] = p
		}
	}
	if interp["sh"] == "" {
		t.Skip("no sh")
	}
	var st store
	r := newExecRuntime(t, &st, interp)
	run := func(interpreter, script string, l api.OpLimits, params [][2]string, input string) (string, error) {
		d := st.add([]byte(script))
		out, err := r.Run(t.Context(), "s", d, userop.NewExecInvocation(interpreter, l, 0, params), []byte(input))
		return string(out), err
	}
	// Scripts expected to finish get room on a loaded machine; those
	// that must be stopped get 1 s.
	l := api.OpLimits{TimeoutMS: 20_000, MemoryMiB: 256, MaxOutput: 100_000}
	tight := l
	tight.TimeoutMS = 1000
	for _, c := range []struct{ script, input, want string }{
		{"cat", "hello", "hello"},
		{`echo "$@"`, "", "--a=1 --b=x y\n"},
		{"env | sort", "", "HOME=/work\nLANG=C.UTF-8\nPATH=/usr/local/bin:/usr/bin:/bin\nPWD=/work\nTMPDIR=/tmp\n"},
		{"ls -A", "", ".script\n"},
	} {
		got, err := run("sh", c.script, l, [][2]string{{"a", "1"}, {"b", "x y"}}, c.input)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.script, got, err, c.want)
		}
	}
	if got, err := run("sh", "id -u", l, nil, ""); err != nil || !unitUID(strings.TrimSpace(got)) {
		t.Errorf("a script runs as uid %q (%v), want one of the sandbox's range", got, err)
	}
	for _, c := range []struct {
		interp, script, want string
		limits               api.OpLimits
	}{
		{"sh", "while :; do :; done", "ran past its time limit of 1s", tight},
		{"sh", "sleep 60 & wait", "ran past its time limit of 1s", tight},
		{"sh", "yes", "output passed its limit of 100000 bytes", l},
		{"sh", "echo no can do >&2; exit 3", "exit status 3; stderr: no can do", l},
		{"python3", "x = bytearray(1 << 30)", "memory limit is 256 MiB", l},
		{"perl", "print 1", "does not allow perl scripts", l},
	} {
		if interp[c.interp] == "" && c.interp != "perl" {
			continue
		}
		if _, err := run(c.interp, c.script, c.limits, nil, ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: %v, want an error saying %q", c.interp, c.script, err, c.want)
		}
	}
	if got, err := run("sh", "cat", l, nil, "still fine"); err != nil || got != "still fine" {
		t.Fatalf("after the hostile scripts: %q, %v", got, err)
	}
	// A script whose digest does not match is not run.
	liar := newRuntime(t, userop.Config{Exec: interp, Fetch: func(context.Context, [32]byte) ([]byte, error) { return []byte("true"), nil }})
	if _, err := liar.Run(t.Context(), "s", sha256.Sum256([]byte("false")), userop.NewExecInvocation("sh", l, 0, nil), nil); err == nil || !strings.Contains(err.Error(), "another digest") {
		t.Fatalf("a script of another digest: %v", err)
	}
}
