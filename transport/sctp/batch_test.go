package sctp

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"
)

// socketPair returns a connected sending socket and a receiving one on
// loopback.
func socketPair(t *testing.T) (tx, rx *udpSocket) {
	t.Helper()
	rc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := net.DialUDP("udp", nil, rc.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	setBuffers(rc, 4<<20)
	tx, rx = mustSocket(t, tc, true), mustSocket(t, rc, false)
	tx.gso.Store(true) // where the kernel has it; a refusal falls back
	t.Cleanup(func() { _ = tx.close(); _ = rx.close() })
	return tx, rx
}

// mustSocket is newUDPSocket for a test.
func mustSocket(t *testing.T, uc *net.UDPConn, connected bool) *udpSocket {
	t.Helper()
	s, err := newUDPSocket(uc, connected)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// payload is packet i of a test stream: runs of equal sizes (GSO runs),
// shorter run ends, and single small packets, each tagged with i.
func payload(i int) []byte {
	size := []int{1452, 1452, 1452, 700, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 100, 16, 1452}[i%16]
	p := bytes.Repeat([]byte{byte(i)}, size)
	copy(p, fmt.Sprintf("%06d", i))
	return p
}

// TestBatchOrder sends packets of mixed sizes through a socket pair and
// checks that each arrives whole and in order: the sender groups runs for
// GSO, the receiver cuts GRO runs apart, and neither may reorder or merge.
// The sender keeps at most window packets ahead of the reader, so that a
// reader slowed by a busy machine never overflows the receive buffer (UDP
// would drop, which is not what this test is about).
func TestBatchOrder(t *testing.T) {
	tx, rx := socketPair(t)
	t.Logf("gso %v, gro %v", tx.gso.Load(), rx.gro)
	const n, window = 2000, 128 // window: ~0.6 MB in flight at most, in a 4 MiB buffer
	var owner sendErr
	read := make(chan struct{}, n) // a token for each packet the reader took
	done := make(chan struct{})
	defer close(done)
	go func() {
		for i := range n {
			if i >= window {
				select {
				case <-read:
				case <-done:
					return
				}
			}
			if _, err := tx.write(payload(i), netip.AddrPort{}, &owner, true); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	_ = rx.setReadDeadline(time.Now().Add(10 * time.Second))
	var last *rxBuf
	shared := 0 // packets cut from the same datagram as the one before
	for i := range n {
		p, err := rx.rd.next()
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if want := payload(i); !bytes.Equal(p.p, want) {
			t.Fatalf("packet %d: got %d bytes starting %q, want %d starting %q", i, len(p.p), p.p[:min(6, len(p.p))], len(want), want[:6])
		}
		if !p.from.IsValid() || int(p.from.Port()) != tx.localAddr().Port {
			t.Fatalf("packet %d from %v", i, p.from)
		}
		if p.rb == last {
			shared++
		}
		last = p.rb
		p.rb.release()
		read <- struct{}{}
	}
	if tx.gso.Load() && rx.gro && shared == 0 {
		t.Error("GSO and GRO are on but no datagram carried more than one packet")
	}
	t.Logf("%d of %d packets shared a datagram with the one before", shared, n)
}

// TestBatchCloseDrains checks that closing a socket sends what is queued.
func TestBatchCloseDrains(t *testing.T) {
	tx, rx := socketPair(t)
	var owner sendErr
	const n = 200
	for i := range n {
		if _, err := tx.write(payload(i), netip.AddrPort{}, &owner, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.write([]byte("late"), netip.AddrPort{}, &owner, true); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after close: %v, want net.ErrClosed", err)
	}
	_ = rx.setReadDeadline(time.Now().Add(5 * time.Second))
	for i := range n {
		p, err := rx.rd.next()
		if err != nil {
			t.Fatalf("got %d of %d packets: %v", i, n, err)
		}
		p.rb.release()
	}
}

// TestBatchSendError checks that a send failure reaches the writer: a
// connected socket towards a closed port learns ECONNREFUSED from the ICMP
// reply, and a later write returns it.
func TestBatchSendError(t *testing.T) {
	rc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	addr := rc.LocalAddr().(*net.UDPAddr)
	rc.Close()
	tc, err := net.DialUDP("udp", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	tx := mustSocket(t, tc, true)
	defer tx.close()
	var owner sendErr
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := tx.write([]byte("hello"), netip.AddrPort{}, &owner, false); err != nil {
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("write: %v, want ECONNREFUSED", err)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no write failed in 5 s")
}

func TestGSORun(t *testing.T) {
	a, b := netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2")
	var o1, o2 sendErr
	pk := func(n int, to netip.AddrPort, o *sendErr) outPacket {
		return outPacket{b: make([]byte, n), to: to, owner: o, gso: true}
	}
	batch := []outPacket{
		pk(1000, a, &o1), pk(1000, a, &o1), pk(500, a, &o1), // run of 3 ending short
		pk(1000, a, &o1), pk(1200, a, &o1), // a longer packet ends a run
		pk(1200, b, &o2), pk(1200, a, &o1), // another peer ends a run
		pk(1200, a, &o1), pk(1200, a, &o1), pk(1200, a, &o1), // a packet whose peer does not read runs ends one
	}
	batch[len(batch)-2].gso = false
	var runs []int
	for i := 0; i < len(batch); {
		j := gsoRun(batch, i)
		runs = append(runs, j-i)
		i = j
	}
	if fmt.Sprint(runs) != "[3 1 1 1 2 1 1]" {
		t.Fatalf("runs %v, want [3 1 1 1 2 1 1]", runs)
	}
	var big []outPacket
	for range 100 {
		big = append(big, pk(1452, a, &o1))
	}
	if n := gsoRun(big, 0); n*1452 > maxGSOBytes || n > maxGSOSegments || n < 40 {
		t.Fatalf("run of %d 1452-byte packets", n)
	}
}

// TestBatchDualStack checks a listener-style socket on ":0" (IPv6, dual
// stack): a datagram from an IPv4 peer arrives with a v4-mapped address,
// and a reply to the unmapped address (as the mux sends it) gets back.
func TestBatchDualStack(t *testing.T) {
	lc, err := net.ListenUDP("udp", &net.UDPAddr{})
	if err != nil {
		t.Fatal(err)
	}
	port := lc.LocalAddr().(*net.UDPAddr).Port
	dc, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	l, d := mustSocket(t, lc, false), mustSocket(t, dc, true)
	defer l.close()
	defer d.close()
	var lo, do sendErr
	deadline := time.Now().Add(5 * time.Second)
	_ = l.setReadDeadline(deadline)
	_ = d.setReadDeadline(deadline)
	for i := range 20 { // a GSO run and single packets, both ways
		if _, err := d.write(payload(i), netip.AddrPort{}, &do, true); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		p, err := l.rd.next()
		if err != nil {
			t.Fatalf("listener, packet %d: %v", i, err)
		}
		if !bytes.Equal(p.p, payload(i)) {
			t.Fatalf("listener, packet %d: wrong payload", i)
		}
		to := p.from // unmapped, as the mux takes it
		if !to.Addr().Is4() {
			t.Fatalf("listener, packet %d: from %v, want an IPv4 address", i, to)
		}
		p.rb.release()
		if _, err := l.write(payload(i), to, &lo, true); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		p, err := d.rd.next()
		if err != nil {
			t.Fatalf("dialer, packet %d: %v (listener's send error: %v)", i, err, lo.get())
		}
		if !bytes.Equal(p.p, payload(i)) {
			t.Fatalf("dialer, packet %d: wrong payload", i)
		}
		p.rb.release()
	}
}

// TestRoundOrder sends packets the way pion's writeLoop does with
// WriteOwned and Flush (rounds of varying length, each sent from the
// caller) and checks that each arrives whole and in order and that every
// buffer is given back.
func TestRoundOrder(t *testing.T) {
	tx, rx := socketPair(t)
	var owner sendErr
	var tr txRound
	const n = 1000
	released := 0
	release := func([]byte) { released++ }
	go func() {
		for i := range n {
			tr.add(outPacket{b: payload(i), release: release, owner: &owner, gso: true})
			if i%7 == 3 || i == n-1 {
				if err := tr.flush(tx, &owner); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	_ = rx.setReadDeadline(time.Now().Add(10 * time.Second))
	for i := range n {
		p, err := rx.rd.next()
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if !bytes.Equal(p.p, payload(i)) {
			t.Fatalf("packet %d: got %d bytes starting %q", i, len(p.p), p.p[:min(6, len(p.p))])
		}
		p.rb.release()
	}
	tr.mu.Lock() // the sender's last flush has returned once it unlocks
	defer tr.mu.Unlock()
	if released != n {
		t.Fatalf("%d of %d buffers given back", released, n)
	}
}

// TestRoundAfterClose checks that a flush on a closed socket fails and
// still gives the buffers back.
func TestRoundAfterClose(t *testing.T) {
	tx, _ := socketPair(t)
	_ = tx.close()
	var owner sendErr
	var tr txRound
	released := false
	tr.add(outPacket{b: []byte("late"), release: func([]byte) { released = true }, owner: &owner})
	if err := tr.flush(tx, &owner); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("flush after close: %v, want net.ErrClosed", err)
	}
	if !released {
		t.Fatal("buffer not given back")
	}
}

// TestRoundClosed: once a round is closed (its conn's Close), a late
// WriteOwned is refused rather than held forever, and what was held is
// flushed and given back.
func TestRoundClosed(t *testing.T) {
	tx, _ := socketPair(t)
	var owner sendErr
	var tr txRound
	released := 0
	rel := func([]byte) { released++ }
	tr.add(outPacket{b: []byte("held"), release: rel, owner: &owner})
	if err := tr.close(tx, &owner); err != nil {
		t.Fatalf("close: %v", err)
	}
	if tr.add(outPacket{b: []byte("late"), release: rel, owner: &owner}) {
		t.Fatal("a closed round took a packet")
	}
	if released != 1 || len(tr.pkts) != 0 {
		t.Fatalf("released %d, holding %d; want 1 and 0", released, len(tr.pkts))
	}
}

// TestHeldRound: while a round is held (a DTLS conn's WriteOwned), a
// conn's plain writes wait for Flush and then leave in order; after the
// flush they go at once again, and Close sends what a round still holds.
func TestHeldRound(t *testing.T) {
	rc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	setBuffers(rc, 4<<20)
	uc, err := net.DialUDP("udp", nil, rc.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	c, err := newDconn(uc)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	buf := make([]byte, 9000)
	read := func(want int, wait time.Duration) error {
		_ = rc.SetReadDeadline(time.Now().Add(wait))
		n, err := rc.Read(buf)
		if err != nil {
			return err
		}
		if !bytes.Equal(buf[:n], payload(want)) {
			t.Fatalf("got %d bytes starting %q, want packet %d", n, buf[:min(6, n)], want)
		}
		return nil
	}
	c.holdRound()
	for i := range 5 {
		if _, err := c.Write(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := heldPackets(c); n != 5 {
		t.Fatalf("the round holds %d packets before Flush, want 5", n)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := read(i, 5*time.Second); err != nil {
			t.Fatalf("packet %d after Flush: %v", i, err)
		}
	}
	if _, err := c.Write(payload(5)); err != nil {
		t.Fatal(err)
	}
	if err := read(5, 5*time.Second); err != nil {
		t.Fatalf("a write after the round: %v", err)
	}
	// A round holds at most maxQueue packets: the next one sends them.
	c.holdRound()
	for i := range maxQueue + 1 {
		if _, err := c.Write(payload(100 + i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range maxQueue {
		if err := read(100+i, 5*time.Second); err != nil {
			t.Fatalf("packet %d of a long round, before Flush: %v", i, err)
		}
	}
	if n := heldPackets(c); n != 1 {
		t.Fatalf("the round holds %d packets after sending maxQueue, want 1", n)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := read(100+maxQueue, 5*time.Second); err != nil {
		t.Fatalf("the last packet of a long round: %v", err)
	}
	c.holdRound()
	if _, err := c.Write(payload(6)); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if err := read(6, 5*time.Second); err != nil {
		t.Fatalf("a held packet at Close: %v", err)
	}
	if _, err := c.Write(payload(7)); err == nil {
		t.Fatal("a write after Close succeeded")
	}
}

// heldPackets is how many packets c's round holds, not yet sent.
func heldPackets(c *dconn) int {
	c.tx.mu.Lock()
	defer c.tx.mu.Unlock()
	return len(c.tx.pkts)
}

// TestRecvAfterDisarm: a datagram that comes while the socket is disarmed
// (a lingering reader) is read by the next recv, also when it comes just
// before recv arms the socket, which then reports only what comes after.
func TestRecvAfterDisarm(t *testing.T) {
	tx, rx := socketPair(t)
	send := func(n int) {
		if err := (&flusher{}).sendOne(tx, outPacket{b: bytes.Repeat([]byte{byte(n)}, n)}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(want int) {
		t.Helper()
		_ = rx.setReadDeadline(time.Now().Add(10 * time.Second))
		p, err := rx.rd.next()
		if err != nil {
			t.Fatalf("waiting for a datagram of %d bytes: %v", want, err)
		}
		if len(p.p) != want {
			t.Fatalf("read %d bytes, want %d", len(p.p), want)
		}
		p.rb.release()
	}
	send(10) // while armed: the socket is on the epoll instance's ready list from now on
	read(10)
	rx.q.disarm()
	send(20) // while disarmed
	read(20)
	rx.q.disarm()
	rx.q.beforeArm = func() { send(30) } // after recv's first look, before it arms
	read(30)
	rx.q.beforeArm = nil
	send(40) // armed again
	read(40)
}
