package ptcp_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/ptcp"
	"github.com/braidhq/braid/transport/transporttest"
)

func newT(t testing.TB, cfg ptcp.Config) transport.Transport {
	tr, err := ptcp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestConformance(t *testing.T) {
	for _, driver := range []string{ptcp.DriverPollAll, ptcp.DriverRR} {
		t.Run(driver, func(t *testing.T) {
			transporttest.Run(t, func(t *testing.T) transport.Transport {
				return newT(t, ptcp.Config{Driver: driver})
			}, "127.0.0.1:0", transporttest.Options{
				Garbage: transporttest.TCPGarbage,
				Channel: transporttest.TCPChannel,
				Attacks: transporttest.TCPAttacks,
			})
		})
	}
}

// TestConformanceTLS runs the suite with TLS keyed to the cluster secret
// on loopback too, with small blocks so that every message is striped.
func TestConformanceTLS(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Transport {
		return newT(t, ptcp.Config{TLS: transport.TLSOn, BlockSize: 4 << 10})
	}, "127.0.0.1:0", transporttest.Options{
		Garbage:   transporttest.TCPGarbage,
		Attacks:   transporttest.TCPAttacks,
		Encrypted: true,
		Intercept: transporttest.TLSIntercept,
	})
}

func BenchmarkTransport(b *testing.B) {
	transporttest.Bench(b, func(b *testing.B) transport.Transport {
		return newT(b, ptcp.Config{})
	}, "127.0.0.1:0")
}

// TestBadConfig: a configuration no association could use is refused with
// a reason, not clamped.
func TestBadConfig(t *testing.T) {
	for _, c := range []struct {
		cfg  ptcp.Config
		want string
	}{
		{ptcp.Config{RecStripes: 17}, "17 stripes: want 1 to 16"},
		{ptcp.Config{MaxStripes: -1}, "-1 maximum stripes"},
		{ptcp.Config{Driver: "fastest"}, `driver "fastest": want rr or pollall`},
	} {
		if _, err := ptcp.New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error with %q", c.cfg, err, c.want)
		}
	}
	if _, err := ptcp.New(ptcp.Config{RecStripes: 16, MaxStripes: 1, Driver: ptcp.DriverRR}); err != nil {
		t.Errorf("a good config refused: %v", err)
	}
}

// TestRouteRefused: a route at which nobody listens (127.0.0.2, the
// listener being on 127.0.0.1 only) refuses its connection at once, which
// then goes to the dialed address; the dial succeeds and says so to
// DialConfig.Logf. A second dial of the transport does not try the route
// again, and says why. TestDeadRoute covers a route that is black-holed.
func TestRouteRefused(t *testing.T) {
	tr := newT(t, ptcp.Config{RecStripes: 2})
	secret := []byte("route refused test secret")
	ln, err := tr.Listen("127.0.0.1:0", transport.ListenConfig{Secret: secret, RecStreams: 1, MaxStreams: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for k, want := range []string{"connect: connection refused", "within the last 30s"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		logf, logged := collectLogs()
		d, l, err := dialTo(ctx, t, tr, ln, transport.DialConfig{Secret: secret, RecStreams: 1, MaxStreams: 1,
			Routes: []string{"127.0.0.2"}, Logf: logf})
		if err != nil {
			t.Fatalf("dial %d with a refused route: %v", k+1, err)
		}
		carries(ctx, t, d, l, "over the dialed address")
		if lines := logged(); len(lines) != 1 || !strings.Contains(lines[0], "connection 2 of 2: route 127.0.0.2:") || !strings.Contains(lines[0], want) {
			t.Errorf("dial %d logged %q, want one line for connection 2's route, saying %q", k+1, lines, want)
		}
	}
}

// TestRouteSlowAck: a route that connects at once but whose answers come
// 4 s late, past the 3 s a route has to connect, still carries its
// connection: only the connecting falls back. When the whole join fell
// back after 3 s, the listener, which had taken the first join, refused the
// second for the same connection as repeated, and the dial failed. The
// liveness bound is 10 s here, so that the listener's end, up before the
// dialer's, waits for the late answers.
func TestRouteSlowAck(t *testing.T) {
	tr := newT(t, ptcp.Config{RecStripes: 2})
	secret := []byte("route slow ack test secret")
	ln, err := tr.Listen("127.0.0.1:0", transport.ListenConfig{Secret: secret, RecStreams: 1, MaxStreams: 1,
		Liveness: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	// The route: a relay at 127.0.0.2 on the listener's port that passes
	// the dialer's bytes at once and the listener's after 4 s.
	rl, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", port))
	if err != nil {
		t.Fatal(err)
	}
	defer rl.Close()
	relayed := make(chan struct{}, 1)
	go func() {
		for {
			c, err := rl.Accept()
			if err != nil {
				return
			}
			relayed <- struct{}{}
			up, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { c.Close(); up.Close() })
			go func() {
				io.Copy(up, c)
				up.Close()
			}()
			go func() {
				time.Sleep(4 * time.Second)
				io.Copy(c, up)
				c.Close()
			}()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	logf, logged := collectLogs()
	d, l, err := dialTo(ctx, t, tr, ln, transport.DialConfig{Secret: secret, RecStreams: 1, MaxStreams: 1,
		Liveness: 10 * time.Second, Routes: []string{"127.0.0.2"}, Logf: logf})
	if err != nil {
		t.Fatalf("dial with a route whose answers are late: %v", err)
	}
	select {
	case <-relayed:
	default:
		t.Fatal("the second connection did not take the route")
	}
	if lines := logged(); len(lines) != 0 {
		t.Errorf("logged %q: the route connected, nothing fell back", lines)
	}
	carries(ctx, t, d, l, "by both paths")
}

// dialTo dials ln with tr and dc and returns both ends of the association,
// which are aborted when the test ends. It fails the test if ln accepts nothing.
func dialTo(ctx context.Context, t *testing.T, tr transport.Transport, ln transport.Listener, dc transport.DialConfig) (d, l transport.Association, err error) {
	t.Helper()
	accepted := make(chan transport.Association, 1)
	go func() {
		a, _ := ln.Accept(ctx)
		accepted <- a
	}()
	if d, err = tr.Dial(ctx, ln.Addr().String(), dc); err != nil {
		return nil, nil, err
	}
	t.Cleanup(func() { d.Abort(nil) })
	if l = <-accepted; l == nil {
		t.Fatal("nothing accepted")
	}
	t.Cleanup(func() { l.Abort(nil) })
	return d, l, nil
}

// carries checks that msg sent by d on stream 0 arrives at l.
func carries(ctx context.Context, t *testing.T, d, l transport.Association, msg string) {
	t.Helper()
	if err := d.Send(ctx, 0, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	if m, err := l.Recv(ctx, 0); err != nil || string(m) != msg {
		t.Fatalf("Recv = %q, %v", m, err)
	}
}

// collectLogs returns a DialConfig.Logf that keeps the lines, and a
// function that returns those kept so far.
func collectLogs() (logf func(format string, args ...any), lines func() []string) {
	var mu sync.Mutex
	var kept []string
	logf = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		kept = append(kept, fmt.Sprintf(format, args...))
	}
	lines = func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(kept)
	}
	return logf, lines
}
