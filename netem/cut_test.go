package netem

import (
	"testing"
	"time"
)

// TestCut: a UDP echo across a cut path gets no answer, and the datagrams
// are counted as dropped; once the cut is lifted, the echo answers again.
func TestCut(t *testing.T) {
	b := upBed(t, "rtt=2ms")
	srv, cli := udpEcho(t)
	echo := func() error {
		if _, err := cli.WriteTo([]byte("ping"), srv.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		cli.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, _, err := cli.ReadFrom(make([]byte, 64))
		return err
	}
	if err := echo(); err != nil {
		t.Fatalf("before the cut: %v", err)
	}
	b.Cut(0, true)
	for i := range 3 {
		if err := echo(); err == nil {
			t.Fatalf("echo %d answered across a cut path", i)
		}
	}
	// At least the three echoes: the devices may send packets of their
	// own meanwhile (IPv6 router solicitations).
	if got := b.Stats()[0].BA.DroppedCut; got < 3 {
		t.Errorf("%d datagrams counted dropped by the cut, want at least the 3 echoes", got)
	}
	b.Cut(0, false)
	if err := echo(); err != nil {
		t.Fatalf("after the cut was lifted: %v", err)
	}
}
