package transporttest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

// The peer process of Liveness/Frozen is the test binary itself, run again
// with -test.run naming exactly the subtest that wants a peer, and with
// these environment variables set.
const (
	// envPeer makes Run play the peer: "listen" or "dial".
	envPeer = "BRAID_TRANSPORTTEST_PEER"
	// envPeerAddr is the address a dialing peer dials.
	envPeerAddr = "BRAID_TRANSPORTTEST_PEER_ADDR"
	// envPeerLiveness is the liveness bound the peer configures.
	envPeerLiveness = "BRAID_TRANSPORTTEST_PEER_LIVENESS"
	// readyPrefix starts the line a peer prints once it listens (with its
	// address) or has dialed.
	readyPrefix = "transporttest-peer ready "
)

// peerRole is the role this process plays for the current subtest, or ""
// when it is not a peer process.
func peerRole() string { return os.Getenv(envPeer) }

// subtestPattern is the -test.run pattern that selects exactly the test
// named name (as testing.T.Name reports it).
func subtestPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// peerProc is a running peer process.
type peerProc struct {
	cmd   *exec.Cmd
	addr  string // what it printed after readyPrefix
	stdin io.WriteCloser
	out   *lockedBuffer // its stderr, for failure reports
}

// startPeer starts a peer process for t's subtest in role ("listen" or
// "dial" to target) and waits until it is ready. The process is killed, and
// waited for, when t ends; it also dies with this process.
func startPeer(t testing.TB, role, target string, liveness time.Duration) *peerProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run="+subtestPattern(t.Name()), "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), envPeer+"="+role, envPeerAddr+"="+target, envPeerLiveness+"="+liveness.String())
	ready := make(chan string, 1)
	p := &peerProc{cmd: cmd, out: &lockedBuffer{}}
	cmd.Stdout = &readyWriter{ready: ready, rest: p.out}
	cmd.Stderr = p.out
	dieWithParent(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	if err := cmd.Start(); err != nil {
		t.Fatalf("start peer process: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = stdin.Close()
		<-exited
	})
	select {
	case p.addr = <-ready:
		return p
	case err := <-exited:
		exited <- err // for the cleanup
		t.Fatalf("peer process exited before it was ready (%v):\n%s", err, p.out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("peer process not ready after 30s:\n%s", p.out.String())
	}
	return nil
}

// freeze stops the peer process (SIGSTOP): its kernel keeps its sockets
// open and answers for them, but the process sends and reads nothing.
func (p *peerProc) freeze(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP peer: %v", err)
	}
}

// readyWriter watches a peer's stdout for its ready line and keeps the
// rest.
type readyWriter struct {
	mu    sync.Mutex // guards line (exec writes from one goroutine; be safe)
	line  []byte
	ready chan<- string
	rest  io.Writer
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.line = append(w.line, p...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			break
		}
		line := string(w.line[:i])
		w.line = w.line[i+1:]
		if addr, ok := strings.CutPrefix(line, readyPrefix); ok {
			select {
			case w.ready <- addr:
			default:
			}
			continue
		}
		fmt.Fprintln(w.rest, line)
	}
	return len(p), nil
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.b.Len() < 64<<10 {
		b.b.Write(p)
	}
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// runPeer plays the peer for the subtest this process was started for: it
// listens (or dials), prints its ready line, echoes every message on stream
// 0, and returns once its parent closes its stdin (or dies).
func runPeer(t *testing.T, s *suite) {
	liveness, err := time.ParseDuration(os.Getenv(envPeerLiveness))
	if err != nil {
		t.Fatalf("peer: %s: %v", envPeerLiveness, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	parentGone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(parentGone)
	}()
	a := peerAssociation(ctx, t, s, liveness)
	defer a.Abort(errTestDone)
	go echoStream(ctx, a, 0)
	<-parentGone
}

// peerAssociation sets up the peer's association in its role.
func peerAssociation(ctx context.Context, t *testing.T, s *suite, liveness time.Duration) transport.Association {
	switch role := peerRole(); role {
	case "listen":
		lc, _ := listenCfg(t, 2, 2)
		lc.Liveness = liveness
		ln := s.listen(t, lc)
		fmt.Printf("%s%s\n", readyPrefix, ln.Addr())
		a, err := ln.Accept(ctx)
		if err != nil {
			t.Fatalf("peer: accept: %v", err)
		}
		return a
	case "dial":
		dc := dialCfg(2, 2)
		dc.Liveness = liveness
		a, err := s.tr.Dial(ctx, os.Getenv(envPeerAddr), dc)
		if err != nil {
			t.Fatalf("peer: dial: %v", err)
		}
		fmt.Printf("%sdialed %s\n", readyPrefix, a.RemoteAddr())
		return a
	default:
		t.Fatalf("peer: unknown role %q", role)
		return nil
	}
}

// echoStream sends every message received on stream st back, until the
// association or ctx ends.
func echoStream(ctx context.Context, a transport.Association, st int) {
	for {
		m, err := a.Recv(ctx, st)
		if err != nil || a.Send(ctx, st, m) != nil {
			return
		}
	}
}
