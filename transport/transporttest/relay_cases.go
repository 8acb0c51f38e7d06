package transporttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

// Interceptor starts a man in the middle between a dialer and the listener
// at listenAddr, for Confidentiality/Relay, and returns the address the
// dialer dials instead of the listener's.
//
// It terminates the transport's cryptography at both ends with the
// credentials the transport derives from secret (for the TLS and DTLS
// transports, the certificate transport/internal/clustertls makes from
// it), and verifies none of the ends': it takes any certificate or none.
// As soon as a dialer's connection reaches it, it starts the same
// transport's handshake with the listener, so that each end faces it
// whatever the other decides. Once both handshakes are through, it relays
// what it decrypts each way, showing every chunk to see (from its own
// goroutines). A half whose handshake went through while the other's
// failed is held until its peer ends it. Everything it starts ends when t
// ends.
type Interceptor func(t testing.TB, listenAddr string, secret []byte, see func(p []byte)) (addr string)

// relayUnit is the unit Confidentiality/Relay sends; its first
// relayMarker bytes are the known plaintext a relay must not see.
var relayUnit = bytes.Repeat([]byte("a unit's input, which no man in the middle may read. "), 400)

const relayMarker = 256

// strangerSecret is the relay's own secret in the stranger's case: its
// certificate is as well formed as a member's, but chains to another
// authority.
var strangerSecret = []byte("a stranger's own secret, not the cluster's")

// testRelay: a man in the middle who terminates the transport's crypto
// with a key of its own must fail the association before Admit and read
// nothing; one holding the cluster secret must carry and read it, which
// shows the interceptor works.
func testRelay(t *testing.T, s *suite) {
	if !s.opts.Encrypted {
		t.Skipf("transport %s as built does not encrypt: Confidentiality/Tap shows the path reads it, and a relay could only do the same", s.tr.Name())
	}
	if s.opts.Intercept == nil {
		t.Fatalf("transport %s encrypts but supplies no Options.Intercept: it must face an active relay, not only a tap", s.tr.Name())
	}
	strangerRelay(t, s)
	insiderRelay(t, s)
}

// strangerRelay dials through a relay with a secret of its own.
func strangerRelay(t *testing.T, s *suite) {
	lc, lg := listenCfg(t, 2, 2)
	var admits atomic.Int64
	lc.Admit = func(_ transport.PeerInfo, n int) (int, func(), error) {
		admits.Add(1)
		return n, nil, nil
	}
	ln := s.listen(t, lc)
	var seen tape
	addr := s.opts.Intercept(t, ln.Addr().String(), strangerSecret, seen.add)
	actx, cancel := context.WithCancel(context.Background())
	defer cancel()
	accepted := make(chan transport.Association, 1)
	go func() {
		defer close(accepted)
		if a, err := ln.Accept(actx); err == nil {
			accepted <- a
		}
	}()
	ctx := timeoutCtx(t, s.opTimeout())
	d, err := s.tr.Dial(ctx, addr, dialCfg(2, 2))
	switch {
	case err == nil:
		t.Errorf("an association came up through a relay without the cluster secret")
		relayed(t, ctx, d, accepted)
	case !errors.Is(err, transport.ErrAuth):
		t.Errorf("Dial through a relay without the secret: %v; want an error wrapping ErrAuth", err)
	}
	if !lg.waitFor(transport.ErrAuth.Error(), s.opTimeout()/2) {
		t.Errorf("the listener did not refuse the relay with an error wrapping ErrAuth")
	}
	cancel()
	if a, ok := <-accepted; ok {
		a.Abort(errTestDone)
		t.Error("Accept returned an association made through a relay without the secret")
	}
	if n := admits.Load(); n != 0 {
		t.Errorf("Admit called %d times: worker threads reserved for a relay without the secret", n)
	}
	if n, clear := seen.holds(relayUnit[:relayMarker]); clear {
		t.Errorf("the relay without the secret read the unit in clear (it decrypted %d bytes)", n)
	}
}

// relayed sends the unit both ways over an association that should not
// exist, to show what the relay reads, and ends it.
func relayed(t *testing.T, ctx context.Context, d transport.Association, accepted <-chan transport.Association) {
	defer d.Abort(errTestDone)
	select {
	case l, ok := <-accepted:
		if !ok {
			return
		}
		defer l.Abort(errTestDone)
		if err := exchange(ctx, d, l, relayUnit); err != nil {
			t.Logf("sending the unit over it: %v", err)
		}
	case <-ctx.Done():
	}
}

// insiderRelay dials through a relay holding the cluster secret.
func insiderRelay(t *testing.T, s *suite) {
	lc, _ := listenCfg(t, 2, 2)
	ln := s.listen(t, lc)
	var seen tape
	addr := s.opts.Intercept(t, ln.Addr().String(), Secret(), seen.add)
	dial := func(ctx context.Context, cfg transport.DialConfig) (transport.Association, error) {
		return s.tr.Dial(ctx, addr, cfg)
	}
	d, l, err := dialAccept(ln, dial, dialCfg(2, 2))
	if err != nil {
		t.Fatalf("no association through a relay holding the cluster secret (%v): the interceptor does not relay, so its failing without the secret shows nothing", err)
	}
	t.Cleanup(func() {
		d.Abort(errTestDone)
		l.Abort(errTestDone)
	})
	if err := exchange(timeoutCtx(t, s.opTimeout()), d, l, relayUnit); err != nil {
		t.Fatalf("through a relay holding the secret: %v", err)
	}
	if n, clear := seen.holds(relayUnit[:relayMarker]); !clear {
		t.Fatalf("a relay holding the cluster secret carried the unit but did not show it in clear (it decrypted %d bytes): the interceptor does not show what it reads", n)
	}
}

// exchange sends msg from d to l and back on stream 1.
func exchange(ctx context.Context, d, l transport.Association, msg []byte) error {
	for _, dir := range [][2]transport.Association{{d, l}, {l, d}} {
		if err := dir[0].Send(ctx, 1, msg); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		got, err := dir[1].Recv(ctx, 1)
		if err != nil {
			return fmt.Errorf("receive: %w", err)
		}
		if !bytes.Equal(got, msg) {
			return fmt.Errorf("received %d bytes, not the %d sent", len(got), len(msg))
		}
	}
	return nil
}

// tape records what a relay shows it.
type tape struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (r *tape) add(p []byte) {
	r.mu.Lock()
	r.buf.Write(p)
	r.mu.Unlock()
}

// holds reports how many bytes were recorded and whether they contain p.
func (r *tape) holds(p []byte) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Len(), bytes.Contains(r.buf.Bytes(), p)
}

// relayHandshakeTimeout bounds an interceptor's handshakes with each end.
const relayHandshakeTimeout = 30 * time.Second
