package ksctp

import (
	"bytes"
	"context"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestKernelPartialDelivery checks the layer below the transport: with a
// small SCTP_PARTIAL_DELIVERY_POINT the kernel returns one SCTP message in
// several pieces, each tagged with its stream by SCTP_RCVINFO, the last with
// MSG_EOR.
func TestKernelPartialDelivery(t *testing.T) {
	if !Available() {
		t.Skip("kernel has no SCTP; run `make vm-test`")
	}
	cfg := Config{Streams: 4, PartialDeliveryPoint: 4 << 10}
	lfd, err := newSocket(unix.AF_INET, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(lfd, 1); err != nil {
		t.Fatal(err)
	}
	sa, _ := unix.Getsockname(lfd)
	ln, _ := newConn(lfd, "l")
	defer ln.f.Close()
	dfd, err := newSocket(unix.AF_INET, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := newConn(dfd, "d")
	defer d.f.Close()
	if err := connect(d, sa); err != nil {
		t.Fatal(err)
	}
	var afd int
	ln.rc.Read(func(fd uintptr) bool {
		afd, _, err = unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		return err != unix.EAGAIN
	})
	if err != nil {
		t.Fatal(err)
	}
	setOptions(afd, &cfg)
	a, _ := newConn(afd, "a")
	defer a.f.Close()

	want := bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := d.writeMsg(ctx, 3, 7, 0, want); err != nil {
		t.Fatal(err)
	}
	buf, oob := make([]byte, 1<<20), make([]byte, 256)
	var got []byte
	pieces := 0
	for {
		pc, err := a.readPiece(buf, oob)
		if err != nil {
			t.Fatal(err)
		}
		if pc.notif {
			continue
		}
		if !pc.hasRI || pc.info.SID != 3 || pc.info.PPID != 7 {
			t.Fatalf("piece %d: rcvinfo %+v (present %v), want stream 3 ppid 7", pieces, pc.info, pc.hasRI)
		}
		got = append(got, buf[:pc.n]...)
		pieces++
		if pc.eor {
			break
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("reassembled %d bytes, want %d", len(got), len(want))
	}
	t.Logf("%d-byte message arrived in %d pieces", len(want), pieces)
	if pieces < 2 {
		t.Errorf("kernel delivered the message whole; partial delivery not exercised")
	}
	in, out, err := sctpStreams(afd)
	if err != nil || in != 5 || out != 5 {
		t.Errorf("SCTP_STATUS streams in=%d out=%d (%v), want 5 and 5 (4 and the control stream)", in, out, err)
	}
}
