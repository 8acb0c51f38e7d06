package tcp_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/tcp"
)

var tlsSecret = []byte("tcp tls test secret")

// recorder forwards TCP connections to target and keeps every byte the
// dialer sent, as an eavesdropper on the path would see them.
type recorder struct {
	ln   net.Listener
	mu   sync.Mutex
	seen bytes.Buffer
}

func record(t *testing.T, target string) *recorder {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(c, u); c.Close() }()
			go func() { io.Copy(io.MultiWriter(u, r), c); u.Close() }()
		}
	}()
	return r
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen.Write(p)
}

func (r *recorder) contains(p []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Contains(r.seen.Bytes(), p)
}

// TestTLSEncrypts: with data-plane TLS on, a message's bytes are not on
// the wire; with it off they are (which shows the check can fail).
func TestTLSEncrypts(t *testing.T) {
	secretText := []byte(strings.Repeat("the unit's input, which nobody on the path may read. ", 100))
	for _, mode := range []transport.TLSMode{transport.TLSOn, transport.TLSOff} {
		t.Run(mode.String(), func(t *testing.T) {
			tr := tcp.New(tcp.Config{TLS: mode})
			ln, err := tr.Listen("127.0.0.1:0", transport.ListenConfig{Secret: tlsSecret, RecStreams: 1, MaxStreams: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			rec := record(t, ln.Addr().String())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			d, err := tr.Dial(ctx, rec.ln.Addr().String(), transport.DialConfig{Secret: tlsSecret, RecStreams: 1, MaxStreams: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			l, err := ln.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := d.Send(ctx, 0, secretText); err != nil {
				t.Fatal(err)
			}
			got, err := l.Recv(ctx, 0)
			if err != nil || !bytes.Equal(got, secretText) {
				t.Fatalf("received %d bytes, %v", len(got), err)
			}
			if seen := rec.contains(secretText[:64]); seen != (mode == transport.TLSOff) {
				t.Errorf("TLS %s: the message's bytes on the wire: %v", mode, seen)
			}
		})
	}
}

// TestTLSRequired: a listener with TLS on refuses a plaintext dialer, and
// one with another secret fails the TLS handshake as an authentication
// error.
func TestTLSRequired(t *testing.T) {
	on := tcp.New(tcp.Config{TLS: transport.TLSOn})
	ln, err := on.Listen("127.0.0.1:0", transport.ListenConfig{Secret: tlsSecret, RecStreams: 1, MaxStreams: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	plain := tcp.New(tcp.Config{TLS: transport.TLSOff})
	if a, err := plain.Dial(ctx, ln.Addr().String(), transport.DialConfig{Secret: tlsSecret, RecStreams: 1, MaxStreams: 1}); err == nil {
		a.Close()
		t.Error("a plaintext dialer associated with a listener that requires TLS")
	}
	_, err = on.Dial(ctx, ln.Addr().String(), transport.DialConfig{Secret: []byte("another cluster"), RecStreams: 1, MaxStreams: 1})
	if !errorsIsAuth(err) {
		t.Errorf("dial with another secret: %v; want an error wrapping transport.ErrAuth", err)
	}
	a, err := on.Dial(ctx, ln.Addr().String(), transport.DialConfig{Secret: tlsSecret, RecStreams: 1, MaxStreams: 1})
	if err != nil {
		t.Fatalf("a TLS dialer with the secret: %v", err)
	}
	a.Close()
}

func errorsIsAuth(err error) bool { return err != nil && errors.Is(err, transport.ErrAuth) }

// TestEmptySendBeforePeerCloses: a Send whose message arrived is not an
// error because the peer answered and closed at once. Over TLS (no writev)
// a frame went out in one Write per buffer, and the empty payload's Write
// failed on the connection the peer's close frame had closed meanwhile:
// tperf's end marker failed like that in 3 of 12 one-second runs.
func TestEmptySendBeforePeerCloses(t *testing.T) {
	tr := tcp.New(tcp.Config{TLS: transport.TLSOn})
	ln, err := tr.Listen("127.0.0.1:0", transport.ListenConfig{Secret: tlsSecret, RecStreams: 1, MaxStreams: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		for {
			a, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			go func() {
				defer a.Close()
				if _, err := a.Recv(ctx, 0); err == nil {
					a.Send(ctx, 0, []byte("bye"))
				}
			}()
		}
	}()
	for i := range 200 {
		a, err := tr.Dial(ctx, ln.Addr().String(), transport.DialConfig{Secret: tlsSecret, RecStreams: 1, MaxStreams: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Send(ctx, 0, nil); err != nil {
			t.Fatalf("round %d: the empty message the peer got failed to send: %v", i, err)
		}
		if p, err := a.Recv(ctx, 0); err != nil || string(p) != "bye" {
			t.Fatalf("round %d: answer %q, %v", i, p, err)
		}
		a.Close()
	}
}
