package fair

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/braidhq/braid/bench/tperf"
	"github.com/braidhq/braid/netem"
	"golang.org/x/sys/unix"
)

// competitor is what runs beside braid's association in a case.
type competitor interface {
	// wait waits for the competitor's flows to end and returns what each
	// one's receiver recorded, and the congestion control its senders
	// ran as their sockets (or iperf3) said.
	wait() ([]Series, string, error)
}

// tcpFlows are bulk TCP connections from braid-b to braid-a, each sending
// under one congestion control until a deadline, their receivers sampled
// every tperf.SampleEvery. Sender and receiver are goroutines of this
// process, their sockets in the namespaces (netem.InNS): the kernel does
// TCP's work, and a write or a read of 256 KiB a few times per millisecond
// is all that is left to this process.
type tcpFlows struct {
	ln      net.Listener
	conns   []net.Conn // the senders, in braid-b
	got     []atomic.Int64
	samples [][]tperf.Sample
	cc      string // what the senders' sockets report
	wg      sync.WaitGroup
	mu      sync.Mutex // guards errs
	errs    []error
	stop    func() bool // ends the context watch
}

// flowBuf is each sender's and receiver's buffer.
const flowBuf = 256 << 10

// startTCPFlows connects n flows to addr:port (in braid-a) from braid-b,
// with congestion control cc, and sends on them for dur.
func startTCPFlows(ctx context.Context, n int, cc string, addr netip.Addr, port int, dur time.Duration) (*tcpFlows, error) {
	f := &tcpFlows{got: make([]atomic.Int64, n), samples: make([][]tperf.Sample, n)}
	hostport := net.JoinHostPort(addr.String(), strconv.Itoa(port))
	err := netem.InNS(netem.NSA, func() error {
		var err error
		f.ln, err = net.Listen("tcp", hostport)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fair: tcp flows: listen: %w", err)
	}
	accepted := make(chan net.Conn, n)
	f.wg.Go(func() { f.accept(n, accepted) })
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("TCP_CONGESTION %s: %w", cc, serr)
		}
		return nil
	}}
	for range n {
		var c net.Conn
		err := netem.InNS(netem.NSB, func() error {
			var err error
			c, err = d.DialContext(ctx, "tcp", hostport)
			return err
		})
		if err != nil {
			f.close()
			return nil, fmt.Errorf("fair: tcp flows: dial: %w", err)
		}
		f.conns = append(f.conns, c)
	}
	if f.cc, err = congestion(f.conns[0]); err != nil {
		f.close()
		return nil, err
	}
	stop := time.Now().Add(dur)
	for _, c := range f.conns {
		f.wg.Go(func() { f.send(c, stop) })
	}
	receivers := make([]net.Conn, 0, n)
	for range n {
		select {
		case c := <-accepted:
			receivers = append(receivers, c)
		case <-time.After(30 * time.Second):
			f.close()
			for _, c := range receivers {
				c.Close()
			}
			return nil, errors.New("fair: tcp flows: the listener accepted too few connections within 30 s")
		}
	}
	var recv sync.WaitGroup
	for i, c := range receivers {
		recv.Go(func() { f.receive(c, &f.got[i]) })
	}
	f.wg.Go(func() { f.sample(&recv) })
	f.stop = context.AfterFunc(ctx, f.abort)
	return f, nil
}

func (f *tcpFlows) fail(err error) {
	f.mu.Lock()
	f.errs = append(f.errs, err)
	f.mu.Unlock()
}

// accept takes n connections and hands them on.
func (f *tcpFlows) accept(n int, to chan<- net.Conn) {
	for range n {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		to <- c
	}
}

// send writes until stop, then closes.
func (f *tcpFlows) send(c net.Conn, stop time.Time) {
	defer c.Close()
	buf := make([]byte, flowBuf)
	if err := c.SetWriteDeadline(stop); err != nil {
		f.fail(err)
		return
	}
	for {
		if _, err := c.Write(buf); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				f.fail(fmt.Errorf("fair: tcp flow: send: %w", err))
			}
			return
		}
	}
}

// receive counts what arrives until the sender closes.
func (f *tcpFlows) receive(c net.Conn, got *atomic.Int64) {
	defer c.Close()
	buf := make([]byte, flowBuf)
	for {
		n, err := c.Read(buf)
		got.Add(int64(n))
		if err != nil {
			if !errors.Is(err, io.EOF) {
				f.fail(fmt.Errorf("fair: tcp flow: receive: %w", err))
			}
			return
		}
	}
}

// sample records every receiver's count each tperf.SampleEvery until all
// have ended, then once more.
func (f *tcpFlows) sample(recv *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { recv.Wait(); close(done) }()
	t := time.NewTicker(tperf.SampleEvery)
	defer t.Stop()
	record := func() {
		now := time.Now()
		for i := range f.got {
			f.samples[i] = append(f.samples[i], tperf.Sample{At: now, Bytes: f.got[i].Load()})
		}
	}
	for {
		record()
		select {
		case <-t.C:
		case <-done:
			record()
			return
		}
	}
}

// abort closes every socket, which ends the goroutines.
func (f *tcpFlows) abort() {
	if f.ln != nil {
		f.ln.Close()
	}
	for _, c := range f.conns {
		c.Close()
	}
}

// close aborts a start that failed and waits for its goroutines.
func (f *tcpFlows) close() {
	f.abort()
	f.wg.Wait()
}

func (f *tcpFlows) wait() ([]Series, string, error) {
	f.wg.Wait()
	f.stop()
	f.ln.Close()
	out := make([]Series, len(f.samples))
	for i, s := range f.samples {
		out[i] = s
	}
	return out, f.cc, errors.Join(f.errs...)
}

// congestion is the TCP congestion control c runs (TCP_CONGESTION).
func congestion(c net.Conn) (string, error) {
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return "", err
	}
	var name string
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		name, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		return "", err
	}
	if gerr != nil {
		return "", fmt.Errorf("fair: TCP_CONGESTION: %w", gerr)
	}
	return name, nil
}
