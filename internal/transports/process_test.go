package transports

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/ksctp"
)

// envPeer makes the test binary an echo peer: "STACK ADDR".
const envPeer = "BRAID_TRANSPORTS_ECHO_PEER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(envPeer); spec != "" {
		os.Exit(echoPeer(spec))
	}
	os.Exit(m.Run())
}

var procSecret = []byte("two processes")

// echoPeer listens with the given SCTP stack, prints its address, and
// echoes every message of one association on its stream until the peer
// closes it; it exits 0 if that went well.
func echoPeer(spec string) int {
	stack, addr, _ := strings.Cut(spec, " ")
	tr, err := New("sctp", Options{SCTPStack: stack})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ln, err := tr.Listen(addr, transport.ListenConfig{Secret: procSecret, RecStreams: 3, Name: stack})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer ln.Close()
	fmt.Printf("ADDR %s\n", ln.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := ln.Accept(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var wg sync.WaitGroup
	errs := make(chan error, a.Streams())
	for s := range a.Streams() {
		wg.Go(func() {
			for {
				m, err := a.Recv(ctx, s)
				if errors.Is(err, transport.ErrPeerClosed) {
					return
				}
				if err == nil {
					err = a.Send(ctx, s, m)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	a.Close()
	select {
	case err := <-errs:
		fmt.Fprintln(os.Stderr, err)
		return 1
	default:
		return 0
	}
}

// TestTwoProcesses runs a braid association between a kernel-stack process
// and a userspace-stack process, each way, over SCTP over UDP: the kernel
// stack's listener on net.sctp.udp_port, and its dialer falling back to
// UDP when the userspace listener's host refuses native SCTP.
func TestTwoProcesses(t *testing.T) {
	if !ksctp.Available() || ksctp.UDPPort() == 0 {
		t.Skip("needs kernel SCTP with net.sctp.udp_port set; run `make vm-test`")
	}
	udpAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ksctp.UDPPort()))
	for _, tc := range []struct {
		name, peerStack, peerAddr, dialStack, network string
	}{
		{"user-dials-kernel-process", StackKernel, udpAddr, StackUser, "udp"},
		{"kernel-dials-user-process", StackUser, "127.0.0.1:0", StackKernel, "sctp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, wait := startEchoPeer(t, tc.peerStack+" "+tc.peerAddr)
			tr, err := New("sctp", Options{SCTPStack: tc.dialStack})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			a, err := tr.Dial(ctx, addr, transport.DialConfig{Secret: procSecret, RecStreams: 3})
			if err != nil {
				t.Fatalf("Dial %s: %v", addr, err)
			}
			if a.Peer().Name != tc.peerStack || a.RemoteAddr().Network() != tc.network {
				t.Errorf("peer %q over %s, want %q over %s", a.Peer().Name, a.RemoteAddr().Network(), tc.peerStack, tc.network)
			}
			for s := range a.Streams() {
				for _, m := range [][]byte{fmt.Appendf(nil, "stream %d", s), bytes.Repeat([]byte{byte(s)}, 200<<10+s)} {
					if err := a.Send(ctx, s, m); err != nil {
						t.Fatal(err)
					}
					if got, err := a.Recv(ctx, s); err != nil || !bytes.Equal(got, m) {
						t.Fatalf("echo on stream %d: %d bytes, %v; want %d bytes", s, len(got), err, len(m))
					}
				}
			}
			a.Close()
			if err := wait(); err != nil {
				t.Fatalf("echo peer: %v", err)
			}
		})
	}
}

// startEchoPeer runs this test binary as an echo peer and returns its
// address and a func that waits for it to exit.
func startEchoPeer(t *testing.T, spec string) (string, func() error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envPeer+"="+spec)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
	if err != nil || !ok {
		t.Fatalf("echo peer said %q (%v)", line, err)
	}
	return addr, cmd.Wait
}
