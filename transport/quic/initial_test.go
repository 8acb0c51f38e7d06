package quic_test

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"
)

// quicSilent opens n QUIC connections from one UDP socket, each with one
// Initial packet carrying a stranger's ClientHello, and sends nothing more:
// the listener answers with its first flight and holds the handshake,
// waiting for a certificate that never comes. The packets are built here
// (RFC 9001 §5), which costs the attacker one ClientHello each instead of
// a QUIC stack's connection. It returns once the listener has answered
// each (or closed it: either is a datagram to the connection's ID); stop
// closes the socket.
func quicSilent(ctx context.Context, addr string, n int) (func(), error) {
	tc, err := strangerTLS()
	if err != nil {
		return nil, err
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	_ = pc.SetReadBuffer(4 << 20)
	answers := make(chan string, 4*n)
	var reader sync.WaitGroup
	reader.Go(func() { readAnswers(pc, answers) })
	stop := func() {
		pc.Close()
		reader.Wait()
	}
	if err := sendInitials(ctx, pc, ua, tc, n, answers); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// sendInitials sends n Initials, at most wave unanswered at once, and
// sends one again if it has had no answer for resend (the listener's
// socket may have overflowed; resending sooner would only add to a busy
// listener's work).
func sendInitials(ctx context.Context, pc *net.UDPConn, to *net.UDPAddr, tc *tls.Config, n int, answers <-chan string) error {
	const (
		wave   = 32
		resend = 2 * time.Second
	)
	type initial struct {
		packet []byte
		sent   time.Time
	}
	pending := map[string]*initial{} // by source connection ID
	tick := time.NewTicker(resend / 4)
	defer tick.Stop()
	for sent, done := 0, 0; done < n; {
		for ; sent < n && len(pending) < wave; sent++ {
			scid, p, err := initialPacket(ctx, tc)
			if err != nil {
				return err
			}
			pending[scid] = &initial{p, time.Now()}
			if _, err := pc.WriteToUDP(p, to); err != nil {
				return err
			}
		}
		select {
		case id := <-answers:
			if _, ok := pending[id]; ok {
				delete(pending, id)
				done++
			}
		case now := <-tick.C:
			for _, in := range pending {
				if now.Sub(in.sent) >= resend {
					in.sent = now
					_, _ = pc.WriteToUDP(in.packet, to)
				}
			}
		case <-ctx.Done():
			return fmt.Errorf("%d of %d handshakes answered: %w", done, n, ctx.Err())
		}
	}
	return nil
}

// readAnswers reports the destination connection ID of every long-header
// packet that arrives, until pc is closed.
func readAnswers(pc *net.UDPConn, answers chan<- string) {
	buf := make([]byte, 64<<10)
	for {
		k, err := pc.Read(buf)
		if err != nil {
			return
		}
		b := buf[:k]
		if len(b) < 6 || b[0]&0x80 == 0 || len(b) < 6+int(b[5]) {
			continue
		}
		select {
		case answers <- string(b[6 : 6+int(b[5])]):
		default: // the sender has stopped waiting
		}
	}
}

// initialPacket builds a client's first datagram: an Initial packet with
// fresh connection IDs carrying a ClientHello made with tc, padded to
// 1200 bytes. It returns the source connection ID, which the listener's
// answers are addressed to.
func initialPacket(ctx context.Context, tc *tls.Config) (string, []byte, error) {
	dcid, scid := make([]byte, 8), make([]byte, 8)
	_, _ = rand.Read(dcid)
	_, _ = rand.Read(scid)
	hello, err := clientHello(ctx, tc, scid)
	if err != nil {
		return "", nil, err
	}
	payload := append([]byte{0x06, 0}, quicVarint(uint64(len(hello)))...) // CRYPTO, offset 0, length
	payload = append(payload, hello...)
	if len(payload) < 1160 {
		payload = append(payload, make([]byte, 1160-len(payload))...) // PADDING
	}
	const pnLen = 1
	hdr := []byte{0xc0 | (pnLen - 1), 0, 0, 0, 1} // long header, Initial, QUIC v1
	hdr = append(append(hdr, byte(len(dcid))), dcid...)
	hdr = append(append(hdr, byte(len(scid))), scid...)
	hdr = append(hdr, 0)                                                           // no token
	hdr = binary.BigEndian.AppendUint16(hdr, 0x4000|uint16(pnLen+len(payload)+16)) // length, two-byte varint
	pnOffset := len(hdr)
	hdr = append(hdr, 0) // packet number 0
	key, iv, hp, err := initialKeys(dcid)
	if err != nil {
		return "", nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return "", nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return "", nil, err
	}
	p := aead.Seal(slices.Clip(hdr), iv, payload, slices.Clone(hdr)) // nonce: iv XOR packet number 0
	hpBlock, err := aes.NewCipher(hp)
	if err != nil {
		return "", nil, err
	}
	mask := make([]byte, 16)
	hpBlock.Encrypt(mask, p[pnOffset+4:pnOffset+20])
	p[0] ^= mask[0] & 0x0f
	p[pnOffset] ^= mask[1]
	return string(scid), p, nil
}

// initialKeys derives a client's Initial packet protection keys from the
// destination connection ID (RFC 9001 §5.2).
func initialKeys(dcid []byte) (key, iv, hp []byte, err error) {
	salt := []byte{0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
		0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a}
	initial, err := hkdf.Extract(sha256.New, dcid, salt)
	if err != nil {
		return nil, nil, nil, err
	}
	client, err := expandLabel(initial, "client in", 32)
	if err != nil {
		return nil, nil, nil, err
	}
	if key, err = expandLabel(client, "quic key", 16); err != nil {
		return nil, nil, nil, err
	}
	if iv, err = expandLabel(client, "quic iv", 12); err != nil {
		return nil, nil, nil, err
	}
	hp, err = expandLabel(client, "quic hp", 16)
	return key, iv, hp, err
}

// expandLabel is TLS 1.3's HKDF-Expand-Label with an empty context.
func expandLabel(secret []byte, label string, n int) ([]byte, error) {
	full := "tls13 " + label
	info := binary.BigEndian.AppendUint16(nil, uint16(n))
	info = append(append(append(info, byte(len(full))), full...), 0)
	return hkdf.Expand(sha256.New, secret, string(info), n)
}

// clientHello is the ClientHello crypto/tls makes for a QUIC client with
// source connection ID scid (its only transport parameter).
func clientHello(ctx context.Context, tc *tls.Config, scid []byte) ([]byte, error) {
	qc := tls.QUICClient(&tls.QUICConfig{TLSConfig: tc})
	defer qc.Close()
	params := append(quicVarint(0x0f), quicVarint(uint64(len(scid)))...) // initial_source_connection_id
	qc.SetTransportParameters(append(params, scid...))
	if err := qc.Start(ctx); err != nil {
		return nil, err
	}
	var hello []byte
	for e := qc.NextEvent(); e.Kind != tls.QUICNoEvent; e = qc.NextEvent() {
		if e.Kind == tls.QUICWriteData && e.Level == tls.QUICEncryptionLevelInitial {
			hello = append(hello, e.Data...)
		}
	}
	if len(hello) == 0 {
		return nil, errors.New("crypto/tls made no ClientHello")
	}
	return hello, nil
}

// quicVarint encodes v as a QUIC variable-length integer (v < 2^30).
func quicVarint(v uint64) []byte {
	switch {
	case v < 1<<6:
		return []byte{byte(v)}
	case v < 1<<14:
		return binary.BigEndian.AppendUint16(nil, 0x4000|uint16(v))
	default:
		return binary.BigEndian.AppendUint32(nil, 0x80000000|uint32(v))
	}
}
