package sctp

import (
	"bytes"
	"net"
	"testing"
	"time"
)

// TestSealedRoundKeepsRecords: the records sealedConn.WriteOwned seals
// into pooled buffers stay intact until the round's Flush sends them (a
// buffer given back before it would be sealed over by the next packet of
// the round), and each is sent once.
func TestSealedRoundKeepsRecords(t *testing.T) {
	rx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	uc, err := net.DialUDP("udp", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	sealer, opener := recordPair(t)
	c := sealedOverUDP(t, uc, sealer)
	var want [][]byte
	for i := range 16 {
		p := bytes.Repeat([]byte{byte(i)}, 1000+i)
		want = append(want, p)
		released := false
		if _, err := c.WriteOwned(p, func([]byte) { released = true }); err != nil {
			t.Fatal(err)
		}
		if !released {
			t.Fatalf("packet %d: not released once sealed", i)
		}
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	for i, p := range want {
		_ = rx.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, err := rx.Read(buf)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		got, ok := opener.openRecord(nil, buf[:n])
		if !ok || !bytes.Equal(got, p) {
			t.Fatalf("record %d: opened %v, %d bytes of %d, want packet %d", i, ok, len(got), len(p), i)
		}
	}
}
