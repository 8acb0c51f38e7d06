package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A command stopped by Ctrl-C (its context cancelled) says "interrupted"
// and exits 130, as a shell reports it, whatever it was doing.
func TestInterruptedCommandExits130(t *testing.T) {
	url := closedURL(t) // the command is still retrying when the signal comes
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{"jobs", "--server", url},
		{"status", "--server", url, "j-0123456789ab"},
		{"jobs", "--server", url, "--json"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(ctx, args, &env{stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }})
		want := "braid " + args[0] + ": interrupted\n"
		if args[len(args)-1] == "--json" {
			want = `{"error":"interrupted","code":"interrupted"}` + "\n"
		}
		if code != 130 || stderr.String() != want || strings.Contains(stderr.String(), "context canceled") {
			t.Errorf("%v: exit %d, stderr %q; want 130 and %q", args, code, stderr.String(), want)
		}
	}
}
