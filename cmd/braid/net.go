package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/braidhq/braid/netem"
)

const netHelp = `Usage: braid net up SPEC | down | status      (root, Linux)

A WAN test bed: host namespaces braid-a and braid-b joined by a userspace
link emulator (TUN devices), which runs as a background process until
'braid net down'. Path i is 10.77.i.1 in braid-a and 10.77.i.2 in braid-b;
run programs on either side with 'ip netns exec braid-a CMD'. With several
paths, braid-a announces 10.77.i.1 for MPTCP ('ip mptcp endpoint ... signal'):
a Multipath TCP connection to 10.77.0.1 gets a subflow through each path.

SPEC: paths separated by ';', settings by ','; a setting applies to both
directions unless prefixed ab. (braid-a to braid-b) or ba.
  rtt=50ms      round-trip delay, half each way (or delay=25ms one way)
  jitter=2ms    uniform extra delay in [-J, +J]; never reorders
  loss=1%       random loss
  ge=P%:R%[:B%[:G%]]  Gilbert–Elliott bursty loss: P(good→bad), P(bad→good),
                loss in the bad state (100%) and in the good one (0%)
  rate=100M     bottleneck rate, bit/s (k, M, G); default unlimited
  queue=100p    bottleneck queue, tail drop: packets (p), bytes (64KB, 1MiB)
                or BDPs (1bdp); default one BDP, at least 100 packets
  mtu=1500      the path's MTU (576 to 9000)
  seed=N        random draws
  cc=cubic      TCP congestion control in both hosts: reno, cubic, bbr or any
                other the kernel has or can load (modprobe tcp_NAME); the bed
                allows it in the root namespace while up, and puts
                net.ipv4.tcp_allowed_congestion_control back when it goes down
Example: braid net up "rtt=20ms,loss=0.5%,rate=100M,cc=reno; rtt=30ms,rate=20M"

The emulator is trusted up to 500 Mbit/s per direction on a 2-core machine
(about 1.8 Gbit/s unlimited is its own ceiling); 'braid net status' shows
its counters, its own drops and how late it delivered.
`

// runNet is `braid net`: up, down, status, and the hidden run (the
// background emulator that up starts).
func runNet(ctx context.Context, args []string, e *env) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(e.stdout, netHelp)
		return nil
	}
	switch args[0] {
	case "up":
		if len(args) != 2 {
			return usageErrorf("want braid net up SPEC (see 'braid net -h')")
		}
		return netUp(ctx, args[1], e)
	case "down":
		if len(args) != 1 {
			return usageErrorf("braid net down takes no argument")
		}
		return netDown(e)
	case "status":
		if len(args) != 1 {
			return usageErrorf("braid net status takes no argument")
		}
		return netStatus(e)
	case "run":
		if len(args) != 2 {
			return usageErrorf("want braid net run SPEC")
		}
		return netRun(ctx, args[1])
	}
	return usageErrorf("unknown net command %q (want up, down or status)", args[0])
}

// netUp starts `braid net run SPEC` in the background and waits until it
// publishes its state.
func netUp(ctx context.Context, spec string, e *env) error {
	if _, err := netem.Parse(spec); err != nil {
		return usageErrorf("%v", err)
	}
	if err := netem.Check(); err != nil {
		return err
	}
	if netem.Alive("") {
		return fmt.Errorf("a test bed is already up; 'braid net down' first")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(netem.DefaultStateDir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(netem.DefaultStateDir, "emulator.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(exe, "net", "run", spec)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives this shell
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(30 * time.Second)
	for {
		if st, err := netem.ReadState(""); err == nil && st.PID == cmd.Process.Pid {
			return printNetState(e.stdout, st)
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("the emulator exited (%v): %s", err, log)
		case <-deadline:
			_ = cmd.Process.Signal(syscall.SIGTERM) // it removes its namespaces on the way out
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
			}
			return fmt.Errorf("the emulator did not come up within 30 s; see %s", logPath)
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// netRun is the background emulator: it owns the bed until SIGTERM.
func netRun(ctx context.Context, spec string) error {
	s, err := netem.Parse(spec)
	if err != nil {
		return usageErrorf("%v", err)
	}
	bed, err := netem.Up(s, netem.Options{})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return bed.Close()
}

// netDown stops the background emulator, if any, and removes whatever a
// killed one left.
func netDown(e *env) error {
	if err := netem.Check(); err != nil {
		return err
	}
	if st, err := netem.ReadState(""); err == nil && netem.Alive("") {
		if p, err := os.FindProcess(st.PID); err == nil {
			_ = p.Signal(syscall.SIGTERM)
		}
		for deadline := time.Now().Add(10 * time.Second); netem.Alive("") && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		if netem.Alive("") {
			if p, err := os.FindProcess(st.PID); err == nil {
				_ = p.Kill()
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if err := netem.Down(netem.Options{}); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "test bed down")
	return nil
}

// netStatus prints the running bed: namespaces, addresses, the model of
// each direction and its counters.
func netStatus(e *env) error {
	st, err := netem.ReadState("")
	switch {
	case err == nil && netem.Alive(""):
		return printNetState(e.stdout, st)
	case netem.Exists():
		return fmt.Errorf("namespaces %s/%s are left from an emulator that is gone; 'braid net down' removes them", netem.NSA, netem.NSB)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return err
	}
	fmt.Fprintln(e.stdout, "no test bed is up ('braid net up SPEC' starts one)")
	return nil
}

func printNetState(w io.Writer, st netem.State) error {
	fmt.Fprintf(w, "test bed up since %s (emulator pid %d), spec %q\n", st.Started.Format(time.RFC3339), st.PID, st.Spec)
	fmt.Fprintf(w, "hosts: namespaces %s and %s ('ip netns exec %s CMD')\n", netem.NSA, netem.NSB, netem.NSA)
	for i, p := range st.Paths {
		fmt.Fprintf(w, "path %d: %s %s/%s ↔ %s %s/%s, mtu %d\n", p.Index, netem.NSA, p.DevA, p.AddrA, netem.NSB, p.DevB, p.AddrB, p.MTU)
		fmt.Fprintf(w, "  a→b: %s\n  b→a: %s\n", p.AB, p.BA)
		if i < len(st.Stats) {
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "  dir\tpackets\tMB\tdelivered\tlost\tburst lost\tqueue drops\temulator drops\tqueue B\tmax late µs\t")
			for _, d := range []struct {
				name string
				s    netem.DirStats
			}{{"a→b", st.Stats[i].AB}, {"b→a", st.Stats[i].BA}} {
				fmt.Fprintf(tw, "  %s\t%d\t%.1f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", d.name, d.s.InPackets, float64(d.s.InBytes)/1e6,
					d.s.OutPackets, d.s.LostRandom, d.s.LostBurst, d.s.DroppedQueue, d.s.DroppedOverflow, d.s.QueueBytes, d.s.MaxLateUs)
			}
			tw.Flush()
		}
	}
	return nil
}
