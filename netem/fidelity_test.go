package netem

import (
	"errors"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The fidelity tests measure the emulator against its spec with real
// sockets in the two namespaces. They need root and /dev/net/tun, and
// skip elsewhere (or while another test bed is up).

func upBed(t *testing.T, s string) *Bed {
	t.Helper()
	if err := Check(); err != nil {
		t.Skipf("emulator fidelity tests skipped: %v", err)
	}
	spec, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Up(spec, Options{Wait: 5 * time.Minute}) // other packages' tests take turns
	if errors.Is(err, ErrBusy) {
		t.Skipf("emulator fidelity tests skipped: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
		if Exists() {
			t.Error("namespaces left after Close")
		}
	})
	return b
}

// listen opens a socket in namespace ns.
func listenIn[T any](t *testing.T, ns string, f func() (T, error)) T {
	t.Helper()
	var v T
	if err := InNS(ns, func() (err error) { v, err = f(); return err }); err != nil {
		t.Fatal(err)
	}
	return v
}

// udpEcho returns a UDP echo server in braid-a on path 0's address and a
// client socket in braid-b, both closed when t ends.
func udpEcho(t *testing.T) (srv, cli net.PacketConn) {
	t.Helper()
	a, b := PathAddrs(0)
	srv = listenIn(t, NSA, func() (net.PacketConn, error) { return net.ListenPacket("udp", a.String()+":0") })
	t.Cleanup(func() { srv.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := srv.ReadFrom(buf)
			if err != nil {
				return
			}
			srv.WriteTo(buf[:n], from)
		}
	}()
	cli = listenIn(t, NSB, func() (net.PacketConn, error) { return net.ListenPacket("udp", b.String()+":0") })
	t.Cleanup(func() { cli.Close() })
	return srv, cli
}

// TestFidelityRTT: a UDP echo across the link takes the spec's RTT,
// within 1 ms (10th percentile of 50; the median within 2 ms). The echo's
// two ends are Go programs, whose scheduling on a busy machine (make test
// runs packages in parallel) only ever adds to a round trip: a round over
// the bounds is measured again, up to 3 rounds, while one under the RTT
// fails at once. An emulator that delays wrongly fails every round.
func TestFidelityRTT(t *testing.T) {
	for _, rtt := range []time.Duration{20 * time.Millisecond, 50 * time.Millisecond} {
		t.Run(rtt.String(), func(t *testing.T) {
			upBed(t, "rtt="+rtt.String())
			srv, cli := udpEcho(t)
			buf := make([]byte, 2048)
			for round := 1; ; round++ {
				var rtts []time.Duration
				for range 50 {
					start := time.Now()
					if _, err := cli.WriteTo(make([]byte, 64), srv.LocalAddr()); err != nil {
						t.Fatal(err)
					}
					cli.SetReadDeadline(time.Now().Add(2 * time.Second))
					if _, _, err := cli.ReadFrom(buf); err != nil {
						t.Fatal(err)
					}
					rtts = append(rtts, time.Since(start))
				}
				slices.Sort(rtts)
				p10, med := rtts[len(rtts)/10], rtts[len(rtts)/2]
				t.Logf("rtt %v, round %d: 10th percentile %v, median %v, min %v, max %v", rtt, round, p10, med, rtts[0], rtts[len(rtts)-1])
				if p10 < rtt || med < rtt {
					t.Fatalf("10th percentile %v, median %v: under the RTT %v", p10, med, rtt)
				}
				if p10-rtt <= time.Millisecond && med-rtt <= 2*time.Millisecond {
					return
				}
				if round == 3 {
					t.Fatalf("10th percentile RTT %v, median %v in every round, want %v to %v and to %v", p10, med, rtt, rtt+time.Millisecond, rtt+2*time.Millisecond)
				}
			}
		})
	}
}

// TestFidelityRate: one TCP flow through a rate-limited link carries the
// rate, within 5% (in IP bytes, measured at the receiver over 2 s after a
// 1 s warm-up).
func TestFidelityRate(t *testing.T) {
	for _, rate := range []string{"50M", "200M"} {
		t.Run(rate, func(t *testing.T) {
			bed := upBed(t, "rtt=4ms,rate="+rate)
			want := bed.Spec().Paths[0].AB.Rate
			a, _ := PathAddrs(0)
			ln := listenIn(t, NSA, func() (net.Listener, error) { return net.Listen("tcp", a.String()+":0") })
			defer ln.Close()
			var got atomic.Int64
			mss := make(chan int, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				mss <- tcpMSS(c)
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
			stop := make(chan struct{})
			go func() {
				buf := make([]byte, 256<<10)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
			defer close(stop)
			time.Sleep(time.Second)
			n0, t0 := got.Load(), time.Now()
			time.Sleep(2 * time.Second)
			n1, t1 := got.Load(), time.Now()
			m := <-mss
			// Each segment of m payload bytes is m+52 IP bytes (IP and
			// TCP headers, timestamps).
			ip := float64(n1-n0) * float64(m+52) / float64(m) * 8 / t1.Sub(t0).Seconds()
			st := bed.Stats()[0].AB
			t.Logf("rate %s: %.1f Mbit/s in IP bytes (mss %d); emulator: %d queue drops, %d own drops, max late %d µs",
				rate, ip/1e6, m, st.DroppedQueue, st.DroppedOverflow, st.MaxLateUs)
			switch {
			case ip < 0.95*want && st.MaxLateUs > maxLateTrusted:
				// The instrument saw its own infidelity: its writer woke
				// that late because the machine was busy (make test runs
				// packages in parallel), not because its model is wrong.
				t.Skipf("%.1f Mbit/s, want %.1f ± 5%%, but the emulator ran up to %d µs late: machine too busy to measure %s",
					ip/1e6, want/1e6, st.MaxLateUs, rate)
			case ip < 0.95*want || ip > 1.05*want:
				t.Errorf("%.1f Mbit/s, want %.1f ± 5%%", ip/1e6, want/1e6)
			}
		})
	}
}

// maxLateTrusted is how late (µs) the emulator may send a packet before a
// rate below the cap is put down to a busy machine rather than the model.
const maxLateTrusted = 2000

// tcpMSS is the connection's maximum segment size.
func tcpMSS(c net.Conn) int {
	mss := 1448
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return mss
	}
	_ = raw.Control(func(fd uintptr) {
		if v, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG); err == nil && v > 0 {
			mss = v
		}
	})
	return mss
}
