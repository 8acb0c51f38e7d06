package server_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/server"
)

// rawConn opens a connection to the server at url from the loopback
// address from (the local IP) and returns it with a reader of its answers.
func rawConn(t *testing.T, url, from string) (net.Conn, *bufio.Reader) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	return c, bufio.NewReader(c)
}

// get sends GET /healthz on c and returns the answer's status, reading its
// body.
func get(t *testing.T, c net.Conn, r *bufio.Reader) int {
	t.Helper()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: braid\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// closedSoon reports whether the server closes c within 10 s.
func closedSoon(c net.Conn, r *bufio.Reader) bool {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := r.ReadByte()
	return err == io.EOF || err != nil && !isTimeout(err)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// Past the per-source bound, a newcomer is answered 503 and closed when
// every connection of the source has a request under way, while another
// source is served; and the oldest idle keep-alive connection of the
// source is closed to make room for it when there is one.
func TestConnsPerSource(t *testing.T) {
	r := runServer(t, server.Config{DataDir: t.TempDir(), MaxConnsPerSource: 2})
	url := r.srv.URL()
	busy := func() net.Conn {
		c, _ := rawConn(t, url, "127.0.0.1")
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\n"); err != nil { // a header under way
			t.Fatal(err)
		}
		return c
	}
	busy()
	second := busy()
	third, thirdR := rawConn(t, url, "127.0.0.1")
	if s := get(t, third, thirdR); s != http.StatusServiceUnavailable {
		t.Errorf("a third connection with two busy: %d, want 503", s)
	}
	if !closedSoon(third, thirdR) {
		t.Error("the connection answered 503 was not closed")
	}
	other, otherR := rawConn(t, url, "127.0.0.2")
	if s := get(t, other, otherR); s != 200 {
		t.Errorf("another source: %d, want 200", s)
	}

	second.Close()
	var idle net.Conn
	var idleR *bufio.Reader
	deadline := time.Now().Add(10 * time.Second)
	for { // until the server has counted the closed one out
		idle, idleR = rawConn(t, url, "127.0.0.1")
		if s := get(t, idle, idleR); s == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no room after a connection closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for { // until the server has marked the idle one idle
		c, cr := rawConn(t, url, "127.0.0.1")
		s := get(t, c, cr)
		if s == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a newcomer with an idle connection to close: %d, want 200", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !closedSoon(idle, idleR) {
		t.Error("the idle connection was not closed to make room")
	}
}

// A request header over 32 KiB is refused with 431, not read into memory.
func TestHeaderBound(t *testing.T) {
	r := runServer(t, server.Config{DataDir: t.TempDir()})
	c, cr := rawConn(t, r.srv.URL(), "127.0.0.1")
	go func() {
		_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: braid\r\nX-Junk: "+strings.Repeat("a", 64<<10)+"\r\n\r\n")
	}()
	resp, err := http.ReadResponse(cr, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("64 KiB header: %d, want 431", resp.StatusCode)
	}
}
