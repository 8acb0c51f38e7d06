package relay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// checkLeaks fails t if goroutines started during the test outlive it.
func checkLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("goroutine leak: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func newRelay(t *testing.T, target string) *Relay {
	t.Helper()
	r, err := New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// tcpTarget listens on loopback and hands out the accepted connections.
func tcpTarget(t *testing.T) (addr string, accepted <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan net.Conn, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			ch <- c
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String(), ch
}

func readN(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return b
}

// nothing checks that c yields no bytes (and no end) for a while.
func nothing(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var b [1]byte
	if n, err := c.Read(b[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: read %d bytes, %v; want nothing", what, n, err)
	}
}

// TestTCP: bytes flow both ways; while blocked nothing moves and nothing
// closes; on unblock the held bytes arrive in order; a half-close passes.
func TestTCP(t *testing.T) {
	checkLeaks(t)
	addr, accepted := tcpTarget(t)
	r := newRelay(t, addr)
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("hello"))
	s := <-accepted
	if got := readN(t, s, 5); string(got) != "hello" {
		t.Fatalf("target read %q", got)
	}
	s.Write([]byte("world"))
	if got := readN(t, c, 5); string(got) != "world" {
		t.Fatalf("client read %q", got)
	}

	r.Block(true)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB, more than one copier buffer
	go c.Write(big)
	s.Write([]byte("back"))
	nothing(t, s, "target while blocked")
	nothing(t, c, "client while blocked")
	r.Block(false)
	if got := readN(t, s, len(big)); !bytes.Equal(got, big) {
		t.Fatal("bytes held during the block arrived damaged")
	}
	if got := readN(t, c, 4); string(got) != "back" {
		t.Fatalf("client read %q after unblocking", got)
	}

	c.(*net.TCPConn).CloseWrite()
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := s.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after the client's half-close the target read %d bytes, %v; want EOF", n, err)
	}
	s.Write([]byte("late"))
	if got := readN(t, c, 4); string(got) != "late" {
		t.Fatalf("half-closed client read %q", got)
	}
}

// udpEcho is a UDP server that echoes every datagram, prefixed by the
// sender's address.
func udpEcho(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	pc.SetReadBuffer(sockBuf)
	pc.SetWriteBuffer(sockBuf)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, bufSize)
		for {
			n, from, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			pc.WriteToUDPAddrPort(append([]byte(from.String()+" "), buf[:n]...), from)
		}
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return pc.LocalAddr().String()
}

func udpClient(t *testing.T, addr string) *net.UDPConn {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.UDPConn)
}

// echo sends p and returns the reply, or "" if none comes in time.
func echo(c *net.UDPConn, p string, wait time.Duration) string {
	c.Write([]byte(p))
	c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, bufSize)
	n, err := c.Read(buf)
	if err != nil {
		return ""
	}
	return string(buf[:n])
}

// TestUDP: each client is a flow of its own towards the target, replies
// come back from the relay's port, and a block drops datagrams both ways.
func TestUDP(t *testing.T) {
	checkLeaks(t)
	r := newRelay(t, udpEcho(t))
	a, b := udpClient(t, r.Addr()), udpClient(t, r.Addr())
	ra, rb := echo(a, "from a", 5*time.Second), echo(b, "from b", 5*time.Second)
	var srcA, srcB string
	if _, err := fmt.Sscanf(ra, "%s from a", &srcA); err != nil {
		t.Fatalf("a got %q", ra)
	}
	if _, err := fmt.Sscanf(rb, "%s from b", &srcB); err != nil {
		t.Fatalf("b got %q", rb)
	}
	if srcA == srcB {
		t.Errorf("two clients reached the target from one address %s", srcA)
	}
	if again := echo(a, "again", 5*time.Second); again != srcA+" again" {
		t.Errorf("a's second datagram came from elsewhere: %q", again)
	}

	r.Block(true)
	if got := echo(a, "blocked", 200*time.Millisecond); got != "" {
		t.Fatalf("got %q through a blocked relay", got)
	}
	r.Block(false)
	if got := echo(a, "open", 5*time.Second); got != srcA+" open" {
		t.Fatalf("after unblocking got %q; want only the new datagram", got)
	}
}

// TestDropUDPAbove: datagrams over the limit are dropped (the echo adds the
// sender's address, so a reply over the limit is dropped on the way back),
// smaller ones pass, and 0 lifts the limit.
func TestDropUDPAbove(t *testing.T) {
	checkLeaks(t)
	r := newRelay(t, udpEcho(t))
	c := udpClient(t, r.Addr())
	src := strings.Fields(echo(c, "hello", 5*time.Second))
	if len(src) != 2 {
		t.Fatalf("no echo: %q", src)
	}
	r.DropUDPAbove(1000)
	small, big := strings.Repeat("s", 1000-len(src[0])-1), strings.Repeat("b", 2000)
	if got := echo(c, small, 5*time.Second); got != src[0]+" "+small {
		t.Fatalf("a reply of exactly the limit did not pass: %d bytes", len(got))
	}
	if got := echo(c, small+"x", 200*time.Millisecond); got != "" {
		t.Fatalf("a reply one byte over the limit passed")
	}
	if got := echo(c, big, 200*time.Millisecond); got != "" {
		t.Fatalf("a datagram over the limit passed")
	}
	r.DropUDPAbove(0)
	if got := echo(c, big, 5*time.Second); got != src[0]+" "+big {
		t.Fatalf("after lifting the limit got %d bytes", len(got))
	}
}

// TestUDPNoLoss: a sender that keeps at most a few datagrams in flight
// loses none through the relay.
func TestUDPNoLoss(t *testing.T) {
	checkLeaks(t)
	r := newRelay(t, udpEcho(t))
	c := udpClient(t, r.Addr())
	c.SetReadBuffer(sockBuf)
	const count, window, size = 5000, 16, 8 << 10
	if lost := pump(c, count, window, size, 5*time.Second); lost != 0 {
		t.Fatalf("%d of %d datagrams lost", lost, count)
	}
}

// pump sends count datagrams of size bytes with at most window unanswered
// and returns how many echoes did not come back within wait.
func pump(c *net.UDPConn, count, window, size int, wait time.Duration) int {
	msg := make([]byte, size)
	buf := make([]byte, bufSize)
	sent, got := 0, 0
	for got < count {
		for sent < count && sent-got < window {
			c.Write(msg)
			sent++
		}
		c.SetReadDeadline(time.Now().Add(wait))
		if _, err := c.Read(buf); err != nil {
			return count - got
		}
		got++
	}
	return 0
}

// TestClose: Close ends everything, blocked copiers and idle flows
// included, and leaves no goroutine behind.
func TestClose(t *testing.T) {
	checkLeaks(t)
	addr, accepted := tcpTarget(t)
	r, err := New(addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := <-accepted
	u := udpClient(t, r.Addr())
	u.Write([]byte("opens a flow"))
	r.Block(true)
	c.Write([]byte("held"))
	time.Sleep(20 * time.Millisecond)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r.Close() // idempotent
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(s); err != nil {
		t.Errorf("target's connection after Close: %v, want EOF", err)
	}
	if _, err := net.Dial("tcp", r.Addr()); err == nil {
		t.Error("relay still accepts after Close")
	}
}

// BenchmarkUDP measures echoed UDP throughput through the relay (each
// datagram crosses it twice), with 16 datagrams of 8 KiB in flight.
func BenchmarkUDP(b *testing.B) {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer pc.Close()
	pc.SetReadBuffer(sockBuf)
	go func() {
		buf := make([]byte, bufSize)
		for {
			n, from, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			pc.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	r, err := New(pc.LocalAddr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	cc, err := net.Dial("udp", r.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	c := cc.(*net.UDPConn)
	c.SetReadBuffer(sockBuf)
	const size = 8 << 10
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	if lost := pump(c, b.N, 16, size, 5*time.Second); lost != 0 {
		b.Fatalf("%d of %d datagrams lost", lost, b.N)
	}
}
