package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// chanConn is one end of an in-memory HandshakeConn pair; closing its out
// channel is hanging up.
type chanConn struct {
	in  <-chan []byte
	out chan<- []byte
}

func (c chanConn) WriteMsg(p []byte) error {
	c.out <- bytes.Clone(p)
	return nil
}

func (c chanConn) ReadMsg() ([]byte, error) {
	p, ok := <-c.in
	if !ok {
		return nil, fmt.Errorf("%w: hung up", ErrPeerClosed)
	}
	return p, nil
}

func connPair() (d, l chanConn) {
	a, b := make(chan []byte, 8), make(chan []byte, 8)
	return chanConn{in: a, out: b}, chanConn{in: b, out: a}
}

type hsOutcome struct {
	dres, lres HandshakeResult
	derr, lerr error
	release    func()
}

// runHandshake runs both sides; each hangs up when its side returns.
func runHandshake(dc DialConfig, lc ListenConfig) hsOutcome {
	d, l := connPair()
	var o hsOutcome
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(l.out)
		o.lres, o.release, o.lerr = ListenHandshake(context.Background(), l, lc)
	}()
	o.dres, o.derr = DialHandshake(context.Background(), d, dc)
	close(d.out)
	<-done
	return o
}

func TestHandshakeRoundTrip(t *testing.T) {
	tests := []struct{ recD, maxD, recL, maxL, want int }{
		{0, 0, 0, 0, 1},
		{4, 8, 2, 8, 4},
		{2, 8, 6, 6, 6},
		{8, 16, 4, 3, 3},
		{MaxStreams, 0, MaxStreams, 0, MaxStreams},
		{5000, 5000, 1, 1, 1},
	}
	for _, tc := range tests {
		var released atomic.Int32
		var admitN int
		var admitPeer PeerInfo
		lc := ListenConfig{Secret: []byte("s"), Name: "worker", RecStreams: tc.recL, MaxStreams: tc.maxL,
			ID: "w-17", Epoch: 2,
			Admit: func(p PeerInfo, n int) (int, func(), error) {
				admitN, admitPeer = n, p
				return n, func() { released.Add(1) }, nil
			}}
		dc := DialConfig{Secret: []byte("s"), Name: "server", RecStreams: tc.recD, MaxStreams: tc.maxD,
			ID: strings.Repeat("s", MaxIDLen), Epoch: 1<<63 + 5}
		o := runHandshake(dc, lc)
		if o.derr != nil || o.lerr != nil {
			t.Fatalf("%+v: errors %v / %v", tc, o.derr, o.lerr)
		}
		if o.dres.Streams != tc.want || o.lres.Streams != tc.want || admitN != tc.want {
			t.Errorf("%+v: streams %d/%d admit %d, want %d", tc, o.dres.Streams, o.lres.Streams, admitN, tc.want)
		}
		wantD := PeerInfo{Name: "server", ID: dc.ID, Epoch: dc.Epoch}
		wantL := PeerInfo{Name: "worker", ID: "w-17", Epoch: 2}
		if o.dres.Peer != wantL || o.lres.Peer != wantD || admitPeer != wantD {
			t.Errorf("peers: dialer sees %+v, listener sees %+v, Admit got %+v", o.dres.Peer, o.lres.Peer, admitPeer)
		}
		if o.dres.Liveness != DefaultLiveness || o.lres.Liveness != DefaultLiveness {
			t.Errorf("liveness %v / %v, want the default %v", o.dres.Liveness, o.lres.Liveness, DefaultLiveness)
		}
		if released.Load() != 0 {
			t.Errorf("release called during the handshake")
		}
		o.release()
		if released.Load() != 1 {
			t.Errorf("release not wired through")
		}
	}
}

func TestHandshakeLiveness(t *testing.T) {
	tests := []struct{ d, l, want time.Duration }{
		{0, 0, DefaultLiveness},
		{time.Second, 0, time.Second},
		{0, 500 * time.Millisecond, 500 * time.Millisecond},
		{2 * time.Second, 7 * time.Second, 2 * time.Second},
		{time.Nanosecond, time.Hour, MinLiveness},
		{time.Hour, time.Hour, MaxLiveness},
		{1500*time.Millisecond + 999*time.Microsecond, 0, 1500 * time.Millisecond},
	}
	for _, tc := range tests {
		o := runHandshake(DialConfig{Secret: []byte("s"), Liveness: tc.d}, ListenConfig{Secret: []byte("s"), Liveness: tc.l})
		if o.derr != nil || o.lerr != nil {
			t.Fatalf("%+v: errors %v / %v", tc, o.derr, o.lerr)
		}
		if o.dres.Liveness != tc.want || o.lres.Liveness != tc.want {
			t.Errorf("offers %v / %v: negotiated %v / %v, want %v", tc.d, tc.l, o.dres.Liveness, o.lres.Liveness, tc.want)
		}
	}
}

// TestHandshakePingsEach: both ends learn that the other pings each
// connection. An offer without the flag (an older peer) parses with the
// same liveness and PeerPingsEach false; and an older peer, reading the
// flag as part of liveness_ms, takes it for a very long offer, clamped
// to MaxLiveness, so that the negotiated bound is still its own.
func TestHandshakePingsEach(t *testing.T) {
	o := runHandshake(DialConfig{Secret: []byte("s")}, ListenConfig{Secret: []byte("s")})
	if o.derr != nil || o.lerr != nil {
		t.Fatalf("errors %v / %v", o.derr, o.lerr)
	}
	if !o.dres.PeerPingsEach || !o.lres.PeerPingsEach {
		t.Errorf("PeerPingsEach %v / %v, want true on both ends", o.dres.PeerPingsEach, o.lres.PeerPingsEach)
	}
	mine, err := normOffer(1, 1, "n", "", 0, 2*time.Second, DefaultIdleFactor)
	if err != nil {
		t.Fatal(err)
	}
	old := mine
	old.PingsEach = false
	got, _, err := parseOffer(appendOffer(nil, hsHello, old), hsHello)
	if err != nil || got.PingsEach || got.Liveness != 2*time.Second {
		t.Errorf("an offer without the flag parsed as %+v, %v; want PingsEach false and 2s", got, err)
	}
	// Both sides must end with the same bound: the older peer, offering
	// 3 s, reads our 2 s offer with its flag as something it clamps to
	// MaxLiveness, and keeps 3 s; so must we.
	b := appendOffer(nil, hsHello, mine)
	ms := binary.BigEndian.Uint32(b[len(hsMagic)+1+hsNonceLen+4:])
	theirs := Offer{Liveness: 3 * time.Second}
	if seen := NormLiveness(time.Duration(ms) * time.Millisecond); NegotiateLiveness(theirs.Liveness, seen) != negotiated(mine, theirs) {
		t.Errorf("an older peer reads our offer as %v and settles on %v; we settle on %v",
			seen, NegotiateLiveness(theirs.Liveness, seen), negotiated(mine, theirs))
	}
}

// TestHandshakeIdle: both ends arrive at the same idle bound, the smaller
// idle factor times the negotiated liveness (at most MaxLiveness), and at
// none if either side offers none, as a peer older than idle factors
// does; and such a peer still parses our offer's liveness and flag.
func TestHandshakeIdle(t *testing.T) {
	for _, tc := range []struct {
		dl, ll       time.Duration
		dIdle, lIdle int
		want         time.Duration
	}{
		{0, 0, DefaultIdleFactor, DefaultIdleFactor, 30 * time.Second},
		{2 * time.Second, 3 * time.Second, DefaultIdleFactor, 4, 8 * time.Second},
		{0, 0, DefaultIdleFactor, 0, 0},
		{0, 0, 0, DefaultIdleFactor, 0},
		{0, 0, 1, DefaultIdleFactor, 0},
		{0, 0, 99, 99, 45 * time.Second},
		{time.Minute, time.Minute, MaxIdleFactor, MaxIdleFactor, MaxLiveness},
	} {
		o := runHandshake(DialConfig{Secret: []byte("s"), Liveness: tc.dl, IdleFactor: tc.dIdle},
			ListenConfig{Secret: []byte("s"), Liveness: tc.ll, IdleFactor: tc.lIdle})
		if o.derr != nil || o.lerr != nil {
			t.Fatalf("errors %v / %v", o.derr, o.lerr)
		}
		if o.dres.IdleLiveness != tc.want || o.lres.IdleLiveness != tc.want {
			t.Errorf("liveness %v/%v, idle factors %d/%d: idle bound %v / %v, want %v on both ends",
				tc.dl, tc.ll, tc.dIdle, tc.lIdle, o.dres.IdleLiveness, o.lres.IdleLiveness, tc.want)
		}
	}
	mine, err := normOffer(1, 1, "n", "", 0, 2*time.Second, DefaultIdleFactor)
	if err != nil {
		t.Fatal(err)
	}
	// A peer of the version before idle factors masks the top byte but
	// for flagPingsEach.
	b := appendOffer(nil, hsHello, mine)
	ms := binary.BigEndian.Uint32(b[len(hsMagic)+1+hsNonceLen+4:])
	if ms>>24&flagPingsEach == 0 || time.Duration(ms&(1<<24-1))*time.Millisecond != 2*time.Second {
		t.Errorf("liveness_ms %#x: an older peer would not read 2s and the pings-each flag", ms)
	}
	older := Offer{Liveness: 3 * time.Second, PingsEach: true}
	if got := negotiatedIdle(mine, older, negotiated(mine, older)); got != 0 {
		t.Errorf("idle bound with a peer that offers none: %v, want 0", got)
	}
}

func TestHandshakeIDTooLong(t *testing.T) {
	long := strings.Repeat("x", MaxIDLen+1)
	if _, err := DialHandshake(context.Background(), chanConn{}, DialConfig{Secret: []byte("s"), ID: long}); err == nil {
		t.Error("dial with an oversize ID succeeded")
	}
	o := runHandshake(DialConfig{Secret: []byte("s")}, ListenConfig{Secret: []byte("s"), ID: long})
	if o.lerr == nil || o.derr == nil {
		t.Errorf("listener with an oversize ID: errors %v / %v, want both to fail", o.derr, o.lerr)
	}
}

// TestHandshakeV1Peer checks that a peer speaking the first handshake
// version is told apart from garbage.
func TestHandshakeV1Peer(t *testing.T) {
	o, _ := normOffer(1, 1, "old", "", 0, 0, 0)
	v1 := appendOffer(nil, hsHello, o)
	copy(v1, hsMagicV1)
	_, _, err := ListenHandshake(context.Background(), &scriptConn{msgs: [][]byte{v1}}, ListenConfig{Secret: []byte("s")})
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "handshake v1") {
		t.Errorf("v1 hello: %v, want ErrProtocol naming handshake v1", err)
	}
	_, err = DialHandshake(context.Background(), &scriptConn{msgs: [][]byte{v1}}, DialConfig{Secret: []byte("s")})
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "upgrade") {
		t.Errorf("v1 challenge: %v, want ErrProtocol asking for an upgrade", err)
	}
}

// tamperConn flips one byte of the n-th message it writes.
type tamperConn struct {
	chanConn
	n, off int
	seen   *int
}

func (c tamperConn) WriteMsg(p []byte) error {
	if *c.seen++; *c.seen == c.n && c.off < len(p) {
		p = bytes.Clone(p)
		p[c.off] ^= 0x01
	}
	return c.chanConn.WriteMsg(p)
}

// TestHandshakeMacCoversOffers flips every byte of the hello and of the
// challenge in turn (after magic and type): each flip must make the
// handshake fail, so no field can be altered unnoticed.
func TestHandshakeMacCoversOffers(t *testing.T) {
	dc := DialConfig{Secret: []byte("s"), Name: "srv", ID: "server-a", Epoch: 9, Liveness: time.Second, RecStreams: 2, MaxStreams: 4}
	lc := ListenConfig{Secret: []byte("s"), Name: "wrk", ID: "worker-b", Epoch: 3, Liveness: 2 * time.Second, RecStreams: 2, MaxStreams: 4,
		Admit: func(_ PeerInfo, n int) (int, func(), error) { return n, nil, nil }}
	o, _ := normOffer(2, 4, "srv", "server-a", 9, time.Second, 0)
	helloLen := len(appendOffer(nil, hsHello, o))
	for _, side := range []string{"hello", "challenge"} {
		for off := len(hsMagic) + 1 + hsNonceLen; off < helloLen; off++ {
			d, l := connPair()
			var seen int
			var derr, lerr error
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer close(l.out)
				var lconn HandshakeConn = l
				if side == "challenge" {
					lconn = tamperConn{chanConn: l, n: 1, off: off, seen: &seen}
				}
				_, _, lerr = ListenHandshake(context.Background(), lconn, lc)
			}()
			var dconn HandshakeConn = d
			if side == "hello" {
				dconn = tamperConn{chanConn: d, n: 1, off: off, seen: &seen}
			}
			_, derr = DialHandshake(context.Background(), dconn, dc)
			close(d.out)
			<-done
			if derr == nil || lerr == nil {
				t.Errorf("%s byte %d flipped: errors %v / %v, want both sides to fail", side, off, derr, lerr)
			}
		}
	}
}

func TestHandshakeGrantFewer(t *testing.T) {
	lc := ListenConfig{Secret: []byte("s"), RecStreams: 8, MaxStreams: 8,
		Admit: func(_ PeerInfo, n int) (int, func(), error) { return 3, nil, nil }}
	o := runHandshake(DialConfig{Secret: []byte("s"), RecStreams: 8, MaxStreams: 8}, lc)
	if o.derr != nil || o.lerr != nil || o.dres.Streams != 3 || o.lres.Streams != 3 {
		t.Fatalf("got %d/%d streams, errors %v / %v; want 3", o.dres.Streams, o.lres.Streams, o.derr, o.lerr)
	}
	o.release() // a nil release from Admit becomes a no-op
}

func TestHandshakeWrongSecret(t *testing.T) {
	for _, side := range []string{"dialer", "listener"} {
		dsec, lsec := []byte("right"), []byte("right")
		if side == "dialer" {
			dsec = []byte("wrong")
		} else {
			lsec = []byte("wrong")
		}
		admitted := false
		lc := ListenConfig{Secret: lsec, Admit: func(_ PeerInfo, n int) (int, func(), error) {
			admitted = true
			return n, nil, nil
		}}
		o := runHandshake(DialConfig{Secret: dsec}, lc)
		if !errors.Is(o.derr, ErrAuth) || !errors.Is(o.lerr, ErrAuth) {
			t.Errorf("%s has the wrong secret: errors %v / %v, want ErrAuth on both sides", side, o.derr, o.lerr)
		}
		if admitted {
			t.Errorf("%s has the wrong secret: Admit was called", side)
		}
	}
}

func TestHandshakeNoSecret(t *testing.T) {
	if _, err := DialHandshake(context.Background(), chanConn{}, DialConfig{}); !errors.Is(err, ErrAuth) {
		t.Errorf("dial without secret: %v", err)
	}
	if _, _, err := ListenHandshake(context.Background(), chanConn{}, ListenConfig{}); !errors.Is(err, ErrAuth) {
		t.Errorf("listen without secret: %v", err)
	}
}

func TestHandshakeRefused(t *testing.T) {
	released := false
	lc := ListenConfig{Secret: []byte("s"), Admit: func(PeerInfo, int) (int, func(), error) {
		return 0, func() { released = true }, errors.New("no free threads " + strings.Repeat("x", 600))
	}}
	o := runHandshake(DialConfig{Secret: []byte("s")}, lc)
	if !errors.Is(o.derr, ErrRefused) || !strings.Contains(o.derr.Error(), "no free threads") {
		t.Errorf("dialer error %v, want ErrRefused with the reason", o.derr)
	}
	if !errors.Is(o.lerr, ErrRefused) {
		t.Errorf("listener error %v, want ErrRefused", o.lerr)
	}
	if released {
		t.Error("release called for a refused association")
	}
}

func TestHandshakeAdmitOutOfRange(t *testing.T) {
	var released atomic.Int32
	lc := ListenConfig{Secret: []byte("s"), Admit: func(_ PeerInfo, n int) (int, func(), error) {
		return n + 1, func() { released.Add(1) }, nil
	}}
	o := runHandshake(DialConfig{Secret: []byte("s")}, lc)
	if o.lerr == nil || o.derr == nil {
		t.Errorf("errors %v / %v, want both to fail", o.derr, o.lerr)
	}
	if released.Load() != 1 {
		t.Errorf("release called %d times, want 1", released.Load())
	}
}

// scriptConn replays messages and swallows writes.
type scriptConn struct{ msgs [][]byte }

func (s *scriptConn) WriteMsg([]byte) error { return nil }

func (s *scriptConn) ReadMsg() ([]byte, error) {
	if len(s.msgs) == 0 {
		return nil, ErrPeerClosed
	}
	p := s.msgs[0]
	s.msgs = s.msgs[1:]
	return p, nil
}

// splitMsgs cuts data into messages, each led by a one-byte length.
func splitMsgs(data []byte) [][]byte {
	var msgs [][]byte
	for len(data) > 0 {
		n := min(int(data[0]), len(data)-1)
		msgs = append(msgs, data[1:1+n])
		data = data[1+n:]
	}
	return msgs
}

func FuzzHandshake(f *testing.F) {
	o, _ := normOffer(2, 4, "seed", "id-seed", 7, time.Second, DefaultIdleFactor)
	hello := appendOffer(nil, hsHello, o)
	chal := appendOffer(nil, hsChallenge, o)
	chal = append(chal, make([]byte, hsMacLen)...)
	f.Add(hello)
	f.Add(chal)
	f.Add([]byte("BRD2\x05reason"))
	f.Add(binary.BigEndian.AppendUint16([]byte("BRD2\x04"), 3))
	f.Add([]byte("BRD1\x01 an old hello"))
	f.Add(append([]byte{byte(len(hello))}, hello...))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, typ := range []byte{hsHello, hsChallenge} {
			if o, rest, err := parseOffer(data, typ); err == nil {
				checkOffer(t, o, data, rest, typ)
			}
		}
		parseHeader(data, hsAccept)
		lc := ListenConfig{Secret: []byte("s"), Admit: func(_ PeerInfo, n int) (int, func(), error) {
			t.Fatal("Admit called for an unauthenticated peer")
			return n, nil, nil
		}}
		ctx := context.Background()
		ListenHandshake(ctx, &scriptConn{msgs: splitMsgs(data)}, lc)
		ListenHandshake(ctx, &scriptConn{msgs: [][]byte{data, data}}, lc)
		DialHandshake(ctx, &scriptConn{msgs: splitMsgs(data)}, DialConfig{Secret: []byte("s")})
		DialHandshake(ctx, &scriptConn{msgs: [][]byte{data, data}}, DialConfig{Secret: []byte("s")})
	})
}

// checkOffer checks an offer parseOffer accepted: its fields are within
// bounds and it re-encodes to the bytes it came from.
func checkOffer(t *testing.T, o Offer, data, rest []byte, typ byte) {
	if len(o.ID) > MaxIDLen || len(o.Name) > maxNameLen || o.Liveness < MinLiveness || o.Liveness > MaxLiveness {
		t.Fatalf("accepted offer out of bounds: %+v", o)
	}
	enc := appendOffer(nil, typ, o)
	ms := binary.BigEndian.Uint32(data[len(hsMagic)+1+hsNonceLen+4:])
	flags := ms >> 24
	ms &= 1<<24 - 1
	known := flags&^(flagPingsEach|0xf0) == 0 && flags>>4 != 1 // an idle factor of 1 is read as none
	if known && ms >= uint32(MinLiveness/time.Millisecond) && ms <= uint32(MaxLiveness/time.Millisecond) &&
		!bytes.Equal(append(enc, rest...), data) {
		t.Fatalf("offer %+v re-encodes to %x, came from %x", o, enc, data)
	}
}
