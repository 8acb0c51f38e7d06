package sctp

import "testing"

// FuzzFirstDatagram: no datagram is both an SCTP INIT and a DTLS
// ClientHello, so a listener never takes one kind for the other.
func FuzzFirstDatagram(f *testing.F) {
	init := []byte{0x16, 0xfe, 0x13, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	hello := []byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 40, 1, 0, 0, 34, 0, 0, 0, 0, 0, 0, 0, 34, 0xfe, 0xfd}
	f.Add(init)
	f.Add(hello)
	f.Fuzz(func(t *testing.T, b []byte) {
		if isInit(b) && isClientHello(b) {
			t.Fatalf("% x is both an INIT and a ClientHello", b)
		}
		if isClientHello(b) && isServerHello(b) {
			t.Fatalf("% x is both a ClientHello and a ServerHello", b)
		}
	})
}

func TestFirstDatagramKinds(t *testing.T) {
	hello := []byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 40, 1, 0, 0, 34, 0, 0, 0, 0, 0, 0, 0, 34, 0xfe, 0xfd}
	if !isClientHello(hello) {
		t.Error("a ClientHello record header was not taken for one")
	}
	server := append([]byte(nil), hello...)
	server[dtlsRecordLen] = dtlsServerHello
	if !isServerHello(server) || isClientHello(server) {
		t.Error("a ServerHello was not told apart")
	}
	epoch1 := append([]byte(nil), hello...)
	epoch1[4] = 1
	if isClientHello(epoch1) {
		t.Error("an encrypted record (epoch 1) was taken for a ClientHello")
	}
}
