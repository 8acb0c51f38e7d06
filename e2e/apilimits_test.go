package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rssBytes is a process's resident set size, from /proc/PID/status.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/PID/status")
	return 0
}

// peakRSS samples pid's RSS every 20 ms until stop closes and returns the
// highest.
func peakRSS(t *testing.T, pid int, stop <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		var peak int64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
			if err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
						kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
						peak = max(peak, kb<<10)
					}
				}
			}
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// Header flood (issue 43, finding 4): 300 connections that each send 900
// KiB of request header, and then nothing more, must grow the server by at
// most 256 MiB, and a call with a token must be answered within 2 s
// meanwhile. With Go's default 1 MiB header limit the server held every
// header whole (1,000 of them took it from 76 MB to 4.17 GB).
func TestAPIHeaderFlood(t *testing.T) {
	const (
		conns     = 300
		header    = 900 << 10
		maxGrowth = 256 << 20
	)
	srv, c := startServer(t)
	addr := strings.TrimPrefix(c.URL(), "http://")
	if _, err := c.Jobs(t.Context()); err != nil { // warm up
		t.Fatal(err)
	}
	pid := srv.cmd.Process.Pid
	base := rssBytes(t, pid)
	stop := make(chan struct{})
	peak := peakRSS(t, pid, stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var sent atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	defer func() {
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
	}()
	junk := strings.Repeat("a", 64<<10)
	for range conns {
		wg.Go(func() {
			var d net.Dialer
			nc, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, nc)
			mu.Unlock()
			if _, err := io.WriteString(nc, "GET /v1/jobs HTTP/1.1\r\nHost: braid\r\nX-Junk: "); err != nil {
				return
			}
			for n := 0; n < header; n += len(junk) {
				w, err := io.WriteString(nc, junk)
				sent.Add(int64(w))
				if err != nil {
					return // the server hung up: it would not hold the header
				}
			}
		})
	}
	wg.Wait()
	t0 := time.Now()
	jobs, err := c.Jobs(t.Context())
	took := time.Since(t0)
	time.Sleep(time.Second) // what the server holds, it holds now
	close(stop)
	growth := <-peak - base
	t.Logf("%d connections sent %.0f MiB of header; the server grew by %.1f MiB at most (from %.1f MiB); an authenticated call took %v",
		conns, float64(sent.Load())/(1<<20), float64(growth)/(1<<20), float64(base)/(1<<20), took.Round(time.Millisecond))
	if err != nil {
		t.Errorf("authenticated call during the flood: %v (%v)", err, jobs)
	}
	if took > 2*time.Second {
		t.Errorf("authenticated call during the flood took %v, more than 2 s", took)
	}
	if growth > maxGrowth {
		t.Errorf("the server grew by %.0f MiB during the flood, more than %d MiB", float64(growth)/(1<<20), maxGrowth>>20)
	}
}

// Connection flood (issue 43, finding 10): with 512 connections from one
// address holding requests under way (the per-source bound, by default),
// a request from that address is answered 503 at once, 64 more such
// connections past the bound are held to be answered so, those past them
// are closed at once, and another address is still served.
func TestAPIConnsPerSource(t *testing.T) {
	const perSource, overflow = 512, 64
	_, c := startServer(t)
	addr := strings.TrimPrefix(c.URL(), "http://")
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	hold := func() net.Conn {
		nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, nc)
		// A request under way: the server cannot close it as idle.
		if _, err := io.WriteString(nc, "GET /v1/jobs HTTP/1.1\r\nHost: braid\r\n"); err != nil {
			t.Fatal(err)
		}
		return nc
	}
	for range perSource + overflow - 1 {
		hold()
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	t0 := time.Now()
	resp, err := hc.Get(c.URL() + "/healthz")
	if err != nil {
		t.Fatalf("a request past the bound: %v", err)
	}
	resp.Body.Close()
	t.Logf("a request from the address holding %d connections: %s after %v", perSource+overflow-1, resp.Status, time.Since(t0).Round(time.Millisecond))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a request past the bound: %s, want 503 with Retry-After", resp.Status)
	}
	// Past the 503 answers: closed at once. The first may take the place
	// of the connection just answered 503, when the server has closed it.
	closed := 0
	for range 8 {
		nc := hold()
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); err != nil && !isTimeoutErr(err) {
			closed++
		}
	}
	if closed < 7 {
		t.Errorf("%d of 8 connections past the 503 answers closed at once, want 7 or 8", closed)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	other := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 10 * time.Second}
	if _, err := c.WithHTTPClient(other).Jobs(t.Context()); err != nil {
		t.Errorf("a call from another address: %v", err)
	}
}

func isTimeoutErr(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
