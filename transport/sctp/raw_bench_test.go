package sctp_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/pion/logging"
	"github.com/pion/sctp"
)

// BenchmarkRawPion measures the tuned pion/sctp stack alone, in the
// configuration the transport uses (MTU 8192, 8 MiB receive buffer, UDP on
// loopback with 4 MiB socket buffers), moving 64 KiB messages on one stream
// with no braid framing. The sender keeps at most 4 MiB buffered (pion's own
// BufferedAmount), the usual way to bound pion's send queue. Compare with
// BenchmarkTransport/bulk: the transport should keep >= 85% of this.
func BenchmarkRawPion(b *testing.B) {
	client, server := rawPair(b)
	cs, err := client.OpenStream(1, sctp.PayloadTypeWebRTCBinary)
	if err != nil {
		b.Fatal(err)
	}
	low := make(chan struct{}, 1)
	cs.SetBufferedAmountLowThreshold(2 << 20)
	cs.OnBufferedAmountLow(func() {
		select {
		case low <- struct{}{}:
		default:
		}
	})
	got := make(chan int64, 1)
	msg := make([]byte, 64<<10)
	go rawDrain(server, got)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	var sent int64
	cpu := startCPU()
	for b.Loop() {
		for cs.BufferedAmount() > 4<<20 {
			select {
			case <-low:
			case <-time.After(10 * time.Millisecond):
			}
		}
		if _, err := cs.WriteSCTP(msg, sctp.PayloadTypeWebRTCBinary); err != nil {
			b.Fatal(err)
		}
		sent += int64(len(msg))
	}
	for cs.BufferedAmount() > 0 { // count delivery, not queueing
		time.Sleep(100 * time.Microsecond)
	}
	cpu.report(b, sent)
}

// rawDrain accepts the server's stream and reads it until it fails.
func rawDrain(a *sctp.Association, got chan<- int64) {
	st, err := a.AcceptStream()
	if err != nil {
		return
	}
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, _, err := st.ReadSCTP(buf)
		if err != nil {
			got <- n
			return
		}
		n += int64(k)
	}
}

func rawPair(b *testing.B) (client, server *sctp.Association) {
	sc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	cc, err := net.DialUDP("udp", nil, sc.LocalAddr().(*net.UDPAddr))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []*net.UDPConn{sc, cc} {
		_ = c.SetReadBuffer(4 << 20)
		_ = c.SetWriteBuffer(4 << 20)
	}
	srvConn := &fixedPeer{UDPConn: sc, peer: cc.LocalAddr()}
	done := make(chan *sctp.Association, 1)
	go func() {
		var sopts []sctp.ServerOption
		for _, o := range rawOpts(srvConn) {
			sopts = append(sopts, o)
		}
		a, err := sctp.ServerWithOptions(sopts...)
		if err != nil {
			b.Error(err)
		}
		done <- a
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var copts []sctp.ClientOption
	for _, o := range rawOpts(cc) {
		copts = append(copts, o)
	}
	client, err = sctp.ClientContext(ctx, copts...)
	if err != nil {
		b.Fatal(err)
	}
	server = <-done
	b.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	return client, server
}

func rawOpts(c net.Conn) []sctp.AssociationOption {
	return []sctp.AssociationOption{
		sctp.WithNetConn(c),
		sctp.WithLoggerFactory(logging.NewDefaultLoggerFactory()),
		sctp.WithMTU(8192),
		sctp.WithMaxReceiveBufferSize(8 << 20),
		sctp.WithMaxMessageSize(64<<10 + 64),
	}
}

// fixedPeer is a listening UDP socket used as a conn to one known peer.
type fixedPeer struct {
	*net.UDPConn
	peer net.Addr
}

func (c *fixedPeer) Read(p []byte) (int, error) {
	n, _, err := c.ReadFrom(p)
	return n, err
}

func (c *fixedPeer) Write(p []byte) (int, error) { return c.WriteTo(p, c.peer) }

func (c *fixedPeer) RemoteAddr() net.Addr { return c.peer }
