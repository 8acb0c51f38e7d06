package sctp

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/braidhq/braid/transport/internal/clustertls"
	"github.com/pion/dtls/v3"
)

// recordPair returns the record protection of the two ends of one made-up
// DTLS association: the client's, then the server's.
func recordPair(tb testing.TB) (*recordCrypt, *recordCrypt) {
	tb.Helper()
	es := exportedState{HandshakeComplete: true, LocalEpoch: 1, RemoteEpoch: 1, CipherSuiteID: recordCipherSuite,
		MasterSecret: bytes.Repeat([]byte{7}, 48), IsClient: true}
	copy(es.LocalRandom[:], bytes.Repeat([]byte{1}, 32))
	copy(es.RemoteRandom[:], bytes.Repeat([]byte{2}, 32))
	c, err := newRecordCrypt(es)
	if err != nil {
		tb.Fatal(err)
	}
	es.IsClient, es.LocalRandom, es.RemoteRandom = false, es.RemoteRandom, es.LocalRandom
	s, err := newRecordCrypt(es)
	if err != nil {
		tb.Fatal(err)
	}
	return c, s
}

// TestRecordSealOpen: a record sealed by one end opens at the other,
// once; a record altered anywhere, of another epoch, or replayed does not.
func TestRecordSealOpen(t *testing.T) {
	c, s := recordPair(t)
	plain := []byte("an SCTP packet, more or less")
	rec, err := c.sealRecord(nil, plain)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec) != len(plain)+recordOverhead || !isAppRecord(rec) {
		t.Fatalf("record of %d bytes (%v)", len(rec), isAppRecord(rec))
	}
	for i := range rec {
		bad := append([]byte(nil), rec...)
		bad[i] ^= 0x40
		if isAppRecord(bad) {
			if _, ok := s.openRecord(nil, bad); ok {
				t.Errorf("a record with byte %d altered opened", i)
			}
		}
	}
	got, ok := s.openRecord(nil, rec)
	if !ok || !bytes.Equal(got, plain) {
		t.Fatalf("opened %q, %v", got, ok)
	}
	if _, ok := s.openRecord(nil, rec); ok {
		t.Error("a replayed record opened")
	}
	if _, ok := c.openRecord(nil, rec); ok {
		t.Error("a record opened with its sender's own key")
	}
	// Both directions, many records, delivered out of order.
	var recs [][]byte
	for i := range 100 {
		r, err := s.sealRecord(nil, []byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if got, ok := c.openRecord(nil, recs[i]); !ok || got[0] != byte(i) {
			t.Fatalf("record %d: %v, %v", i, got, ok)
		}
	}
}

// TestReplayWindow checks the window's edges: numbers in order, late
// within the window, too old, and after a jump beyond it.
func TestReplayWindow(t *testing.T) {
	var w replayWindow
	check := func(seq uint64, seen bool) {
		t.Helper()
		if got := w.seen(seq); got != seen {
			t.Fatalf("seen(%d) = %v, want %v", seq, got, seen)
		}
		if !seen {
			w.mark(seq)
		}
	}
	check(sealSeqBase, false)
	check(sealSeqBase, true)
	check(sealSeqBase+5, false)
	check(sealSeqBase+3, false) // late, within the window
	check(sealSeqBase+3, true)
	check(sealSeqBase+4, false)
	top := uint64(sealSeqBase + 5000)
	check(top, false)
	check(top-replayWindowBits, true) // too old to tell
	check(top-replayWindowBits+1, false)
	check(top-1, false)
	check(top-64, false)
	check(top-64, true)
	check(top+64*replayWords*3, false) // a jump clears everything
	check(top+64*replayWords*3-1, false)
	check(top, true) // too old now
	check(maxRecordSeq, false)
	check(maxRecordSeq, true)
}

// teeConn is a packet conn that copies every datagram it reads to got.
type teeConn struct {
	net.PacketConn
	got chan []byte
}

func (c teeConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, a, err := c.PacketConn.ReadFrom(b)
	if err == nil {
		select {
		case c.got <- append([]byte(nil), b[:n]...):
		default:
		}
	}
	return n, a, err
}

// pionHandshake runs a pion/dtls handshake between two UDP sockets on
// loopback with braid's settings; the client reads through a teeConn.
func pionHandshake(t *testing.T) (client, server *dtls.Conn, cu, su *net.UDPConn, tee chan []byte) {
	t.Helper()
	su, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	cu, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := clustertls.For([]byte("record test secret"))
	if err != nil {
		t.Fatal(err)
	}
	var copts []dtls.ClientOption
	var sopts []dtls.ServerOption
	for _, o := range dtlsOptions(cfgs, 1200) {
		copts, sopts = append(copts, o), append(sopts, o)
	}
	copts = append(copts, dtls.WithRootCAs(cfgs.Pool), dtls.WithServerName(clustertls.ServerName))
	sopts = append(sopts, dtls.WithClientCAs(cfgs.Pool), dtls.WithClientAuth(dtls.RequireAndVerifyClientCert))
	tee = make(chan []byte, 64)
	client, err = dtls.ClientWithOptions(teeConn{cu, tee}, su.LocalAddr(), copts...)
	if err != nil {
		t.Fatal(err)
	}
	server, err = dtls.ServerWithOptions(su, cu.LocalAddr(), sopts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- server.HandshakeContext(ctx) }()
	if err := client.HandshakeContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return client, server, cu, su, tee
}

// TestRecordInteropPion: records sealed here are what pion/dtls reads,
// and pion/dtls's records open here, with the keys derived from the state
// pion/dtls exports: an end that seals its own records talks to one that
// leaves them to pion/dtls.
func TestRecordInteropPion(t *testing.T) {
	client, server, cu, su, tee := pionHandshake(t)
	rc, err := recordCryptOf(client)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := recordCryptOf(server)
	if err != nil {
		t.Fatal(err)
	}

	// Sealed here, read by pion/dtls.
	msg := []byte("sealed by braid, opened by pion/dtls")
	rec, err := rc.sealRecord(nil, msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cu.WriteTo(rec, su.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	_ = server.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 2048)
	n, err := server.Read(buf)
	if err != nil || !bytes.Equal(buf[:n], msg) {
		t.Fatalf("pion/dtls read %q, %v", buf[:n], err)
	}

	// Sealed by pion/dtls, opened here (by the client's keys and by the
	// server's, which must not).
	drainTee(tee)
	msg = []byte("sealed by pion/dtls, opened by braid")
	if _, err := server.Write(msg); err != nil {
		t.Fatal(err)
	}
	select {
	case rec = <-tee:
	case <-time.After(30 * time.Second):
		t.Fatal("no record reached the client")
	}
	if !isAppRecord(rec) {
		t.Fatalf("pion/dtls's record % x is not one application data record", rec)
	}
	if _, ok := rs.openRecord(nil, rec); ok {
		t.Error("the server's own record opened with its keys")
	}
	got, ok := rc.openRecord(nil, rec)
	if !ok || !bytes.Equal(got, msg) {
		t.Fatalf("opened %q, %v", got, ok)
	}
}

func drainTee(c chan []byte) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// FuzzOpenRecord: no datagram makes opening panic, and none but a sealed
// record opens.
func FuzzOpenRecord(f *testing.F) {
	c, s := recordPair(f)
	rec, err := c.sealRecord(nil, []byte("seed"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec)
	f.Add(rec[:recordOverhead])
	f.Add([]byte{contentAppData, dtls12Major, dtls12Minor, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		if !isAppRecord(b) {
			return
		}
		if p, ok := s.openRecord(nil, b); ok && !bytes.Equal(b, rec) {
			t.Fatalf("% x opened to % x", b, p)
		}
	})
}

// BenchmarkRecordSeal and BenchmarkRecordOpen: one record of an
// Ethernet-sized SCTP packet, into a buffer with room (no allocations).
func BenchmarkRecordSeal(b *testing.B) {
	c, _ := recordPair(b)
	plain, dst := make([]byte, 1400), make([]byte, 0, 1400+recordOverhead)
	b.SetBytes(int64(len(plain)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.sealRecord(dst, plain); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRecordOpen(b *testing.B) {
	c, s := recordPair(b)
	plain := make([]byte, 1400)
	recs := make([][]byte, 1024)
	for i := range recs {
		recs[i], _ = c.sealRecord(nil, plain)
	}
	dst := make([]byte, 0, len(plain))
	b.SetBytes(int64(len(plain)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(recs) { // sealed afresh, so that none is a replay
			b.StopTimer()
			for k := range recs {
				recs[k], _ = c.sealRecord(recs[k][:0], plain)
			}
			i = 0
			b.StartTimer()
		}
		if _, ok := s.openRecord(dst, recs[i]); !ok {
			b.Fatal("did not open")
		}
		i++
	}
}
