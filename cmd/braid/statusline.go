package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"golang.org/x/sys/unix"
)

// statusLine is what a client command tells the user on stderr while it
// works: on a terminal one line, redrawn in place, that shows the progress
// bar or that the server is unreachable and when the next try is, and is
// cleared when the server answers again; off a terminal one line per
// outage and no progress.
//
// Its methods may be called concurrently.
type statusLine struct {
	w      io.Writer
	tty    bool
	server string

	mu    sync.Mutex // guards shown and down
	shown bool       // the terminal's line holds text the next output must not follow
	down  bool       // an outage was reported and is not over
}

func newStatusLine(w io.Writer, server string) *statusLine {
	return &statusLine{w: w, tty: isTerminal(w), server: server}
}

// notify is client.Retry's Notify: the server did not answer, and the next
// try is in wait.
func (s *statusLine) notify(err error, wait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hint := ""
	var ns *client.NoServerError
	if errors.As(err, &ns) {
		hint = " (if no braid server runs there, set --server or $BRAID_SERVER)"
	}
	if s.tty {
		s.draw(fmt.Sprintf("server unreachable (%s); retrying in %v…", reason(err), wait.Round(10*time.Millisecond)))
	} else if !s.down {
		fmt.Fprintf(s.w, "braid: server %s unreachable (%s); retrying%s\n", s.server, reason(err), hint)
	}
	s.down = true
}

// recovered is client.Retry's Recovered: the server answers again.
func (s *statusLine) recovered() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = false
	if s.tty && s.shown {
		fmt.Fprint(s.w, "\r\033[K")
		s.shown = false
	}
}

// progress shows text, on a terminal only.
func (s *statusLine) progress(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tty {
		s.draw(text)
	}
}

// end ends the line, so that what is printed next starts on a line of its
// own.
func (s *statusLine) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shown {
		fmt.Fprintln(s.w)
		s.shown = false
	}
}

// draw replaces the terminal's line with text. The caller holds mu.
func (s *statusLine) draw(text string) {
	fmt.Fprint(s.w, "\r\033[K"+text)
	s.shown = true
}

// reason says in a few words why the server did not answer.
func reason(err error) string {
	var ns *client.NoServerError
	var errno syscall.Errno
	var ae *api.Error
	switch {
	case errors.As(err, &ns):
		return client.DialReason(ns.Err)
	case errors.As(err, &errno):
		return errno.Error()
	case errors.As(err, &ae):
		return ae.Error()
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	}
	return err.Error()
}

// isTerminal reports whether w is a terminal (not merely a character
// device such as /dev/null).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
