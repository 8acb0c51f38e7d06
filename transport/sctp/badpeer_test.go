package sctp

import (
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/transporttest"
	"github.com/pion/sctp"
)

var secret = []byte("sctp test secret")

// badPeer dials ln with raw pion, runs the braid handshake and returns the
// association, ready to misbehave.
func badPeer(t *testing.T, tr *Transport, addr string) *sctp.Association {
	t.Helper()
	pa, _ := rawPeer(t, tr, addr)
	return pa
}

// rawPeer is badPeer that also returns the UDP socket pion runs on.
func rawPeer(t *testing.T, tr *Transport, addr string) (*sctp.Association, net.Conn) {
	t.Helper()
	return rawPeerN(t, tr, addr, 2)
}

// rawPeerN is rawPeer asking for n streams.
func rawPeerN(t *testing.T, tr *Transport, addr string, n int) (*sctp.Association, net.Conn) {
	t.Helper()
	pa, uc := pionClient(t, tr, addr)
	t.Cleanup(func() { _ = pa.Close() })
	pa.SetMaxMessageSize(1 << 20) // lets it send oversize fragments
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ctl, _ := pa.OpenStream(0, ppi)
	if _, err := transport.DialHandshake(ctx, hsConn{st: ctl}, transport.DialConfig{Secret: secret, RecStreams: n, MaxStreams: n}); err != nil {
		t.Fatal(err)
	}
	return pa, uc
}

// pionClient associates a raw pion client with the listener at addr (the
// SCTP handshake only) and returns it with its UDP socket.
func pionClient(t *testing.T, tr *Transport, addr string) (*sctp.Association, net.Conn) {
	t.Helper()
	uc, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var opts []sctp.ClientOption
	for _, o := range tr.options(uc, &garbageHook{}, nil, tr.pathTo(uc.RemoteAddr()), false) {
		opts = append(opts, o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pa, err := sctp.ClientContext(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return pa, uc
}

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Logf(f string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimSpace(strings.ReplaceAll(f, "%v", "")))
	for _, a := range args {
		if e, ok := a.(error); ok {
			l.lines = append(l.lines, e.Error())
		}
	}
}

func (l *logLines) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func TestBadPeerIsAborted(t *testing.T) {
	frag := func(h fragHeader, n int) []byte { return append(appendFragHeader(nil, h), make([]byte, n)...) }
	cases := []struct {
		name, want string
		stream     uint16
		msgs       [][]byte
	}{
		{"unknown message", "unknown message", 1, [][]byte{frag(fragHeader{msgID: 9, offset: 10, total: 20}, 10)}},
		{"oversize fragment", "oversize fragment", 1, [][]byte{frag(fragHeader{total: 1 << 20}, maxFragment+1)}},
		{"runt", "shorter than its header", 1, [][]byte{{1, 2, 3}}},
		{"too large", "message too large", 1, [][]byte{frag(fragHeader{total: 1 << 30}, 10)}},
		{"beyond credit", "beyond its credit", 2, manyFragments(initialCredit/maxFragment + 2)},
		{"bad stream", "streams negotiated", 7, [][]byte{frag(fragHeader{flags: flagLast, total: 1}, 1)}},
		{"bad control", "bad control message", 0, [][]byte{{9, 9}}},
	}
	tr := New(Config{StreamWindow: initialCredit})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var released atomic.Int64
			logs := &logLines{}
			lc := transport.ListenConfig{Secret: secret, RecStreams: 2, MaxStreams: 2, Logf: logs.Logf,
				Admit: func(_ transport.PeerInfo, n int) (int, func(), error) { return n, func() { released.Add(1) }, nil }}
			ln, err := tr.Listen("127.0.0.1:0", lc)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			pa := badPeer(t, tr, ln.Addr().String())
			la, err := ln.Accept(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			st, _ := pa.OpenStream(c.stream, ppi)
			for _, m := range c.msgs {
				_, _ = st.WriteSCTP(m, ppi)
			}
			select {
			case <-la.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("association with a misbehaving peer was not aborted")
			}
			if !strings.Contains(la.Err().Error(), c.want) || !logs.has(c.want) {
				t.Errorf("Err() = %v; logged %q; want %q", la.Err(), logs.lines, c.want)
			}
			la.Close()
			if released.Load() != 1 {
				t.Errorf("release called %d times", released.Load())
			}
			echo(t, tr, ln)
		})
	}
}

// manyFragments is n full-size messages, more than the initial credit
// allows while the application does not read.
func manyFragments(n int) [][]byte {
	var out [][]byte
	for i := range n {
		h := fragHeader{flags: flagLast, msgID: uint32(i), total: maxFragment}
		out = append(out, append(appendFragHeader(nil, h), make([]byte, maxFragment)...))
	}
	return out
}

// echo checks that ln still serves a well-behaved peer.
func echo(t *testing.T, tr *Transport, ln transport.Listener) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		if a, err := ln.Accept(ctx); err == nil {
			defer a.Close()
			m, _ := a.Recv(ctx, 0)
			_ = a.Send(ctx, 0, m)
			_, _ = a.Recv(ctx, 0)
		}
	}()
	d, err := tr.Dial(ctx, ln.Addr().String(), transport.DialConfig{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Send(ctx, 0, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if m, err := d.Recv(ctx, 0); err != nil || string(m) != "ping" {
		t.Fatalf("echo: %q, %v", m, err)
	}
}

func FuzzParseFragment(f *testing.F) {
	f.Add(appendFragHeader(nil, fragHeader{flags: flagLast, total: 3}), 3)
	f.Add([]byte{0xff}, 0)
	f.Fuzz(func(t *testing.T, p []byte, extra int) {
		h, body, err := parseFragment(p, 1024)
		if err != nil {
			return
		}
		if len(body) > 1024 || uint64(h.offset)+uint64(len(body)) > uint64(h.total) {
			t.Fatalf("accepted bad fragment %+v (%d bytes)", h, len(body))
		}
		q := append(appendFragHeader(nil, h), body...)
		if string(q) != string(p) {
			t.Fatal("round trip differs")
		}
	})
}

// TestManyStreams opens an association with the most streams the contract
// allows and uses the last one in both directions.
func TestManyStreams(t *testing.T) {
	d, l := loopbackPair(t, New(Config{}), transport.ListenConfig{Secret: secret, RecStreams: transport.MaxStreams},
		transport.DialConfig{Secret: secret, RecStreams: transport.MaxStreams})
	if l.Streams() != transport.MaxStreams {
		t.Fatalf("listener association has %d streams", l.Streams())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	last := transport.MaxStreams - 1
	for _, dir := range [][2]transport.Association{{d, l}, {l, d}} {
		if err := dir[0].Send(ctx, last, []byte("far")); err != nil {
			t.Fatal(err)
		}
		if m, err := dir[1].Recv(ctx, last); err != nil || string(m) != "far" {
			t.Fatalf("Recv on stream %d: %q, %v", last, m, err)
		}
	}
}

func FuzzCheckPacket(f *testing.F) {
	f.Add([]byte{0x13, 0x88, 0x13, 0x88, 0, 0, 0, 0, 1, 2, 3, 4, 1, 0, 0, 4})
	f.Fuzz(func(t *testing.T, p []byte) {
		if checkPacket(p) == nil && (len(p) < sctpCommonHeader+4 || len(p) > maxDatagram) {
			t.Fatalf("accepted a %d-byte packet", len(p))
		}
		_ = isInit(p)
	})
}

// TestAnnouncedSizeNotAllocated: a peer that starts 64 MiB messages on 16
// streams and sends one byte of each makes the receiver hold about 1 MiB
// per stream, not the 1 GiB announced.
func TestAnnouncedSizeNotAllocated(t *testing.T) {
	const streams, announced = 16, 64 << 20
	tr := New(Config{})
	ln, err := tr.Listen("127.0.0.1:0", transport.ListenConfig{Secret: secret, RecStreams: streams, MaxStreams: streams})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pa, _ := rawPeerN(t, tr, ln.Addr().String(), streams)
	acc, err := ln.Accept(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	la := acc.(*Association)
	for s := range streams {
		st, _ := pa.OpenStream(uint16(s+1), ppi)
		_, _ = st.WriteSCTP(append(appendFragHeader(nil, fragHeader{msgID: 1, total: announced}), 7), ppi)
	}
	started := func() int {
		n := 0
		for _, r := range la.recv {
			r.mu.Lock()
			if r.partial != nil {
				n++
			}
			r.mu.Unlock()
		}
		return n
	}
	for deadline := time.Now().Add(5 * time.Second); started() < streams; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d messages started", started(), streams)
		}
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 64<<20 {
		t.Fatalf("heap grew by %d MiB for %d one-byte fragments announcing %d MiB each", grew>>20, streams, announced>>20)
	}
	if la.Err() != nil {
		t.Fatalf("association ended: %v", la.Err())
	}
}

// TestDataBeforeAuthAborted: a peer that sends on a data stream before the
// listener has accepted it (before it could know the secret) is aborted at
// once, instead of having pion buffer what it sends until the handshake
// times out.
func TestDataBeforeAuthAborted(t *testing.T) {
	tr := New(Config{})
	logs := &logLines{}
	ln, err := tr.Listen("127.0.0.1:0", transport.ListenConfig{Secret: secret, RecStreams: 2, MaxStreams: 2, Logf: logs.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pa, _ := pionClient(t, tr, ln.Addr().String())
	defer pa.Abort("test over")
	ctl, _ := pa.OpenStream(0, ppi)
	_, _ = ctl.WriteSCTP(transporttest.Hello()[2:], ppi) // a message: no length prefix
	st, _ := pa.OpenStream(1, ppi)
	_, _ = st.WriteSCTP(make([]byte, 64<<10), ppi)
	for deadline := time.Now().Add(2 * time.Second); !logs.has("before authentication"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not aborted within 2 s; logged %q", logs.lines)
		}
	}
}
