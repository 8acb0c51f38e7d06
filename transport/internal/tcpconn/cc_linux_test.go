package tcpconn

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
)

// hostCC is the host's default congestion control, and another the kernel
// has (reno, which every kernel has and allows, unless that is the
// default).
func hostCC(t *testing.T) (def, other string) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		t.Skipf("no TCP congestion control sysctl: %v", err)
	}
	def = strings.TrimSpace(string(b))
	other = "reno"
	if def == "reno" {
		if have, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control"); strings.Contains(string(have), "cubic") && os.Geteuid() == 0 {
			other = "cubic"
		} else {
			t.Skip("the host runs reno and no other congestion control can be set here")
		}
	}
	return def, other
}

// TestCC: a connection dialed with Options.CC runs it, and so does the one
// a listener with it accepts (plain TCP and, where the kernel has it,
// MPTCP); without it both run the host's default. An unknown name is an
// error that says what the kernel has.
func TestCC(t *testing.T) {
	def, other := hostCC(t)
	for _, mptcp := range []bool{false, true} {
		if mptcp {
			if b, err := os.ReadFile("/proc/sys/net/mptcp/enabled"); err != nil || strings.TrimSpace(string(b)) != "1" {
				continue
			}
		}
		for _, cc := range []string{"", other} {
			want := cc
			if want == "" {
				want = def
			}
			lc := net.ListenConfig{Control: controlCC(cc)}
			lc.SetMultipathTCP(mptcp)
			ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			c, err := DialConn(context.Background(), ln.Addr().String(), Options{CC: cc, MPTCP: mptcp})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for side, conn := range map[string]*net.TCPConn{"dialed": c, "accepted": s.(*net.TCPConn)} {
				got, err := CC(conn)
				if err != nil || got != want {
					t.Errorf("MPTCP %v, CC %q: the %s connection runs %q (%v), want %q", mptcp, cc, side, got, err, want)
				}
			}
		}
	}

	_, err := DialConn(context.Background(), "127.0.0.1:1", Options{CC: "nosuchcc"})
	if err == nil || !strings.Contains(err.Error(), "the kernel has") {
		t.Fatalf("CC nosuchcc: %v, want an error that lists what the kernel has", err)
	}
}
