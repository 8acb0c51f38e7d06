package netem

import (
	"math"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFidelityMathis: one reno TCP flow over a lossy link against the
// Mathis et al. formula, rate = MSS/RTT × sqrt(3/2)/sqrt(p), within 15%.
// Each point needs tens of seconds for enough loss events, so it runs only
// with BRAID_NETEM_MATHIS=1 (about 1.5 min).
func TestFidelityMathis(t *testing.T) {
	if os.Getenv("BRAID_NETEM_MATHIS") == "" {
		t.Skip("set BRAID_NETEM_MATHIS=1 to compare a reno flow with the Mathis formula (about 1.5 min)")
	}
	for _, pt := range []struct {
		rtt  time.Duration
		loss string
		p    float64
	}{
		{20 * time.Millisecond, "0.5%", 0.005},
		{50 * time.Millisecond, "1%", 0.01},
		// At 0.1% loss (and 100 ms) Linux reno ran 1.5× over the
		// formula: few loss events per run, and SACK recovery folds
		// several losses into one window cut. The formula is tested
		// where it holds, at 0.5–2%.
		{100 * time.Millisecond, "2%", 0.02},
	} {
		t.Run(pt.rtt.String()+"/"+pt.loss, func(t *testing.T) {
			// Data flows b to a; only data packets are lost.
			upBed(t, "rtt="+pt.rtt.String()+",ba.loss="+pt.loss+",cc=reno")
			a, _ := PathAddrs(0)
			ln := listenIn(t, NSA, func() (net.Listener, error) { return net.Listen("tcp", a.String()+":0") })
			defer ln.Close()
			var got atomic.Int64
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				buf := make([]byte, 256<<10)
				for {
					n, err := c.Read(buf)
					got.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
			c := listenIn(t, NSB, func() (net.Conn, error) { return net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second) })
			defer c.Close()
			setReno(t, c)
			go func() {
				buf := make([]byte, 256<<10)
				for {
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
			time.Sleep(3 * time.Second)
			n0, t0 := got.Load(), time.Now()
			time.Sleep(25 * time.Second)
			rate := float64(got.Load()-n0) * 8 / time.Since(t0).Seconds()
			mss := float64(tcpMSS(c))
			want := mss * 8 / pt.rtt.Seconds() * math.Sqrt(1.5) / math.Sqrt(pt.p)
			t.Logf("rtt %v loss %s: %.2f Mbit/s, Mathis %.2f Mbit/s (ratio %.2f)", pt.rtt, pt.loss, rate/1e6, want/1e6, rate/want)
			if rate < 0.85*want || rate > 1.15*want {
				t.Errorf("%.2f Mbit/s, want %.2f ± 15%%", rate/1e6, want/1e6)
			}
		})
	}
}

func setReno(t *testing.T, c net.Conn) {
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, "reno")
	}); err != nil || serr != nil {
		t.Fatalf("TCP_CONGESTION reno: %v %v", err, serr)
	}
}
