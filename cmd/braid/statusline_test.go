package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
)

// errRefused is the client's error for a server that refused the
// connection.
var errRefused = &client.NoServerError{URL: "http://srv", Err: &url.Error{Op: "Get", URL: "http://127.0.0.1:1/v1/jobs",
	Err: &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}}

// On a terminal the line shows each retry in place and is cleared when the
// server answers.
func TestStatusLineTerminal(t *testing.T) {
	var b bytes.Buffer
	s := &statusLine{w: &b, tty: true, server: "http://srv"}
	s.progress("job [##..]")
	s.notify(errRefused, 812*time.Millisecond)
	s.notify(errRefused, 1600*time.Millisecond)
	s.recovered()
	s.progress("job [###.]")
	s.end()
	s.end()
	want := "\r\033[Kjob [##..]" +
		"\r\033[Kserver unreachable (connection refused); retrying in 810ms…" +
		"\r\033[Kserver unreachable (connection refused); retrying in 1.6s…" +
		"\r\033[K" +
		"\r\033[Kjob [###.]\n"
	if b.String() != want {
		t.Errorf("terminal got\n%q\nwant\n%q", b.String(), want)
	}
}

// Off a terminal: one line per outage, not per retry, and no progress.
func TestStatusLineLog(t *testing.T) {
	var b bytes.Buffer
	s := &statusLine{w: &b, tty: false, server: "http://srv"}
	s.progress("job [##..]")
	for range 3 {
		s.notify(errRefused, time.Second)
	}
	s.recovered()
	s.notify(&api.Error{Code: api.CodeUnavailable, Message: "server shutting down"}, time.Second)
	s.end()
	want := "braid: server http://srv unreachable (connection refused); retrying (if no braid server runs there, set --server or $BRAID_SERVER)\n" +
		"braid: server http://srv unreachable (unavailable: server shutting down); retrying\n"
	if b.String() != want {
		t.Errorf("log got\n%q\nwant\n%q", b.String(), want)
	}
}

func TestReason(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{errRefused, "connection refused"},
		{fmt.Errorf("braid server x: %w", &url.Error{Op: "Get", Err: io.EOF}), "connection closed"},
		{errors.New("something else"), "something else"},
	}
	for _, tc := range cases {
		if got := reason(tc.err); got != tc.want {
			t.Errorf("reason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestTimeoutFlag(t *testing.T) {
	var f timeoutFlag
	if f.or(time.Minute) != time.Minute || f.String() != "" {
		t.Errorf("unset: %v %q", f.or(time.Minute), f.String())
	}
	if err := f.Set("0"); err != nil || f.or(time.Minute) != 0 {
		t.Errorf("--timeout 0: %v, %v", err, f.or(time.Minute))
	}
	for _, bad := range []string{"-1s", "soon"} {
		if err := (&timeoutFlag{}).Set(bad); err == nil {
			t.Errorf("--timeout %s accepted", bad)
		}
	}
}
