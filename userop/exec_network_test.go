//go:build linux

package userop_test

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/braidhq/braid/userop"
)

// TestExecNetworkWhenAsked: a unit whose operation asks for the network
// gets the worker's where the runtime allows it, and fails where not.
func TestExecNetworkWhenAsked(t *testing.T) {
	interp := interpreters(t, "python3")
	if os.Geteuid() != 0 {
		t.Skip("scripts run in a sandbox, which needs root")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var st store
	d := st.add([]byte(connect))
	l := roomy
	l.Network = true
	inv := userop.NewExecInvocation("python3", l, 0, [][2]string{{"port", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}})
	open := newRuntime(t, userop.Config{Fetch: st.fetch, Exec: interp, ExecNetwork: true})
	if out, err := open.Run(t.Context(), "s", d, inv, nil); err != nil || string(out) != "connected\n" {
		t.Errorf("with the network allowed: %q, %v", out, err)
	}
	closed := newRuntime(t, userop.Config{Fetch: st.fetch, Exec: interp})
	if _, err := closed.Run(t.Context(), "s", d, inv, nil); err == nil || !strings.Contains(err.Error(), "--exec-network") {
		t.Errorf("with the network not allowed: %v", err)
	}
}
