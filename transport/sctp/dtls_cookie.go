package sctp

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// DTLS's stateless cookie exchange (see cookie.go). The listener answers a
// ClientHello without a valid cookie with a HelloVerifyRequest it builds
// itself (RFC 6347 §4.2.1), and starts a DTLS server (pion/dtls, told to
// skip its own hello verification) only for a ClientHello that carries a
// valid cookie as the first message of its handshake (message_seq 0).
//
// pion/dtls's client answers a HelloVerifyRequest with a second
// ClientHello (message_seq 1) that a fresh server cannot take: its
// handshake transcript and sequence numbers start at the first. So braid's
// dialer asks for the cookie with a ClientHello of its own (probeHello)
// before it starts pion's client, and gives pion the cookie to put in its
// first ClientHello. That costs the same round trip a verified hello
// always costs. A dialer of another kind (an older braid, a DTLS client
// that retries with message_seq 1) is not answered; see docs/security.md.

const (
	dtlsHelloVerifyRequest = 3
	dtlsHandshakeHeader    = 12
	dtlsRandomLen          = 32
)

// dtlsVersion12 is DTLS 1.2's version on the wire.
var dtlsVersion12 = [2]byte{0xfe, 0xfd}

// helloFields are the parts of a ClientHello datagram the listener reads.
type helloFields struct {
	recordSeq [6]byte // the record's sequence number, echoed in the answer
	msgSeq    uint16  // the handshake message's sequence number
	cookie    []byte
}

// parseClientHello reads an unfragmented ClientHello from the first record
// of datagram b (which isClientHello accepted).
func parseClientHello(b []byte) (helloFields, bool) {
	var f helloFields
	if len(b) < dtlsRecordLen+dtlsHandshakeHeader {
		return f, false
	}
	copy(f.recordSeq[:], b[5:11])
	rec := b[dtlsRecordLen:]
	if n := int(binary.BigEndian.Uint16(b[11:13])); n <= len(rec) {
		rec = rec[:n]
	} else {
		return f, false
	}
	if len(rec) < dtlsHandshakeHeader {
		return f, false
	}
	length, fragOff, fragLen := uint24(rec[1:]), uint24(rec[6:]), uint24(rec[9:])
	f.msgSeq = binary.BigEndian.Uint16(rec[4:])
	body := rec[dtlsHandshakeHeader:]
	if fragOff != 0 || fragLen != length || length > len(body) {
		return f, false
	}
	body = body[:length]
	off := 2 + dtlsRandomLen // client_version, random
	if len(body) < off+1 {
		return f, false
	}
	off += 1 + int(body[off]) // session_id
	if len(body) < off+1 || len(body) < off+1+int(body[off]) {
		return f, false
	}
	f.cookie = body[off+1 : off+1+int(body[off])]
	return f, true
}

func uint24(b []byte) int { return int(b[0])<<16 | int(b[1])<<8 | int(b[2]) }

func appendUint24(b []byte, v int) []byte { return append(b, byte(v>>16), byte(v>>8), byte(v)) }

// appendHelloVerify appends a HelloVerifyRequest carrying cookie, in a
// record with the sequence number of the ClientHello it answers (RFC 6347
// §4.2.1: a stateless server echoes it).
func appendHelloVerify(b []byte, recordSeq [6]byte, cookie []byte) []byte {
	body := append([]byte{dtlsVersion12[0], dtlsVersion12[1], byte(len(cookie))}, cookie...)
	b = append(b, dtlsHandshake)
	b = append(b, dtlsVersion12[:]...)
	b = append(b, 0, 0) // epoch
	b = append(b, recordSeq[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(dtlsHandshakeHeader+len(body)))
	b = append(b, dtlsHelloVerifyRequest)
	b = appendUint24(b, len(body))
	b = append(b, 0, 0) // message_seq
	b = appendUint24(b, 0)
	b = appendUint24(b, len(body))
	return append(b, body...)
}

// isHelloVerify reports whether datagram b starts with a
// HelloVerifyRequest.
func isHelloVerify(b []byte) bool {
	return isHandshakeRecord(b) && b[dtlsRecordLen] == dtlsHelloVerifyRequest
}

// helloVerifyCookie returns the cookie of a HelloVerifyRequest datagram.
func helloVerifyCookie(b []byte) ([]byte, bool) {
	body := b[dtlsRecordLen+dtlsHandshakeHeader:]
	if len(body) < 3 || len(body) < 3+int(body[2]) {
		return nil, false
	}
	return append([]byte(nil), body[3:3+int(body[2])]...), true
}

// probeHello is the ClientHello a dialer asks for a cookie with: DTLS 1.2,
// the one suite braid uses, no extensions.
func probeHello() []byte {
	body := []byte{dtlsVersion12[0], dtlsVersion12[1]}
	var random [dtlsRandomLen]byte
	_, _ = rand.Read(random[:])
	body = append(body, random[:]...)
	body = append(body, 0)                                                                 // session_id
	body = append(body, 0)                                                                 // cookie
	body = append(body, 0, 2, 0xc0, 0x2b)                                                  // TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
	body = append(body, 1, 0)                                                              // compression: null
	b := []byte{dtlsHandshake, dtlsVersion12[0], dtlsVersion12[1], 0, 0, 0, 0, 0, 0, 0, 0} // epoch, sequence number
	b = binary.BigEndian.AppendUint16(b, uint16(dtlsHandshakeHeader+len(body)))
	b = append(b, dtlsClientHello)
	b = appendUint24(b, len(body))
	b = append(b, 0, 0)
	b = appendUint24(b, 0)
	b = appendUint24(b, len(body))
	return append(b, body...)
}

// fetchCookie asks the listener at the other end of c for a cookie:
// it sends probeHello until a HelloVerifyRequest comes back, after one
// second, then two, four..., until ctx ends. Later HelloVerifyRequests
// (answers to the probes sent again) are dropped by c (dropHelloVerify).
func fetchCookie(ctx context.Context, c *dconn) ([]byte, error) {
	var mu sync.Mutex // guards ended, so that no deadline outlasts ctx's end
	ended := false
	setDeadline := func(t time.Time, end bool) {
		mu.Lock()
		defer mu.Unlock()
		if !ended {
			_ = c.SetReadDeadline(t)
		}
		ended = ended || end
	}
	stop := context.AfterFunc(ctx, func() { setDeadline(time.Now(), true) }) // wakes the read
	defer func() {
		stop()
		mu.Lock()
		ended = true
		_ = c.SetReadDeadline(time.Time{})
		mu.Unlock()
	}()
	wait := time.Second
	for {
		if _, err := c.Write(probeHello()); err != nil {
			return nil, err
		}
		deadline := time.Now().Add(wait)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		setDeadline(deadline, false)
		cookie, err := awaitHelloVerify(c)
		switch {
		case err == nil:
			c.dropHelloVerify.Store(true)
			return cookie, nil
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return nil, err
		case ctx.Err() != nil:
			return nil, fmt.Errorf("no DTLS cookie from the listener: %w", ctx.Err())
		}
		wait *= 2
	}
}

// awaitHelloVerify reads datagrams until a HelloVerifyRequest.
func awaitHelloVerify(c *dconn) ([]byte, error) {
	for {
		pk, err := c.sock.rd.next()
		if err != nil {
			return nil, err
		}
		p := pk.p
		var cookie []byte
		ok := isHelloVerify(p)
		if ok {
			cookie, ok = helloVerifyCookie(p)
		}
		pk.rb.release()
		if ok {
			return cookie, nil
		}
	}
}
