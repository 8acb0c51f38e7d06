package transport

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// The braid handshake runs on an association's first channel before any
// stream carries data:
//
//	dialer   -> listener  hello     {nonceD, recD, maxD, nameD}
//	listener -> dialer    challenge {nonceL, recL, maxL, nameL, macL}
//	dialer   -> listener  auth      {macD}
//	listener -> dialer    accept    {streams}  |  reject {reason}
//
// macL = HMAC-SHA256(secret, "braid listener" || hello || challenge-without-mac)
// macD = HMAC-SHA256(secret, "braid dialer"   || hello || challenge)
//
// Each side proves it knows the secret without sending it, and the nonces make
// the proofs single-use. The listener reserves threads (Admit) only after the
// dialer's mac checks out.

const (
	hsMagic    = "BRD1"
	hsNonceLen = 32
	hsMacLen   = sha256.Size
	// MaxHandshakeMessage bounds every handshake message; a reader may
	// refuse anything longer before reading it.
	MaxHandshakeMessage = 512
	maxNameLen          = 255
)

const (
	hsHello byte = 1 + iota
	hsChallenge
	hsAuth
	hsAccept
	hsReject
)

// HandshakeConn is the minimal message channel the handshake runs over: the
// first stream, connection or control channel of a transport. ReadMsg must
// not return more than MaxHandshakeMessage bytes (it fails instead).
type HandshakeConn interface {
	WriteMsg(p []byte) error
	ReadMsg() ([]byte, error)
}

// Offer is one side's half of the negotiation.
type Offer struct {
	Nonce    [hsNonceLen]byte
	Rec, Max int
	Name     string
}

// HandshakeResult is what a finished handshake agreed on.
type HandshakeResult struct {
	Streams int
	Peer    PeerInfo
}

func checkSecret(secret []byte) error {
	if len(secret) == 0 {
		return fmt.Errorf("%w: no cluster secret configured", ErrAuth)
	}
	return nil
}

func normOffer(rec, maxS int, name string) (Offer, error) {
	var o Offer
	if rec <= 0 {
		rec = 1
	}
	if maxS <= 0 || maxS > MaxStreams {
		maxS = MaxStreams
	}
	if len(name) > maxNameLen {
		name = name[:maxNameLen]
	}
	o.Rec, o.Max, o.Name = min(rec, maxS), maxS, name
	_, err := rand.Read(o.Nonce[:])
	return o, err
}

// appendOffer encodes magic, type and an offer.
func appendOffer(b []byte, typ byte, o Offer) []byte {
	b = append(b, hsMagic...)
	b = append(b, typ)
	b = append(b, o.Nonce[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(o.Rec))
	b = binary.BigEndian.AppendUint16(b, uint16(o.Max))
	b = append(b, byte(len(o.Name)))
	return append(b, o.Name...)
}

// parseHeader checks magic and type and returns the body.
func parseHeader(p []byte, want byte) ([]byte, error) {
	if len(p) < len(hsMagic)+1 || string(p[:len(hsMagic)]) != hsMagic {
		return nil, fmt.Errorf("%w: not a braid handshake (bad magic)", ErrProtocol)
	}
	if got := p[len(hsMagic)]; got != want {
		if got == hsReject && want == hsAccept {
			return nil, fmt.Errorf("%w: %s", ErrRefused, p[len(hsMagic)+1:])
		}
		return nil, fmt.Errorf("%w: handshake message type %d, want %d", ErrProtocol, got, want)
	}
	return p[len(hsMagic)+1:], nil
}

// ParseOffer decodes a hello (typ 1) or a challenge (typ 2, whose trailing
// mac is returned as rest).
func parseOffer(p []byte, typ byte) (o Offer, rest []byte, err error) {
	body, err := parseHeader(p, typ)
	if err != nil {
		return o, nil, err
	}
	if len(body) < hsNonceLen+5 {
		return o, nil, fmt.Errorf("%w: handshake offer truncated", ErrProtocol)
	}
	copy(o.Nonce[:], body)
	body = body[hsNonceLen:]
	o.Rec = int(binary.BigEndian.Uint16(body))
	o.Max = int(binary.BigEndian.Uint16(body[2:]))
	n := int(body[4])
	body = body[5:]
	if len(body) < n {
		return o, nil, fmt.Errorf("%w: handshake name truncated", ErrProtocol)
	}
	o.Name, rest = string(body[:n]), body[n:]
	if o.Rec < 1 || o.Max < 1 || o.Max > MaxStreams || o.Rec > o.Max {
		return o, nil, fmt.Errorf("%w: bad stream offer rec=%d max=%d", ErrProtocol, o.Rec, o.Max)
	}
	return o, rest, nil
}

func mac(secret []byte, label string, parts ...[]byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(label))
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

// DialHandshake runs the dialer's side. The caller arranges for ctx's
// deadline to interrupt the conn (for instance with SetDeadline).
func DialHandshake(ctx context.Context, c HandshakeConn, cfg DialConfig) (HandshakeResult, error) {
	var res HandshakeResult
	if err := checkSecret(cfg.Secret); err != nil {
		return res, err
	}
	mine, err := normOffer(cfg.RecStreams, cfg.MaxStreams, cfg.Name)
	if err != nil {
		return res, err
	}
	hello := appendOffer(nil, hsHello, mine)
	if err := c.WriteMsg(hello); err != nil {
		return res, fmt.Errorf("send hello: %w", err)
	}
	chal, err := c.ReadMsg()
	if err != nil {
		return res, fmt.Errorf("read challenge: %w", err)
	}
	theirs, rest, err := parseOffer(chal, hsChallenge)
	if err != nil {
		return res, err
	}
	if len(rest) != hsMacLen {
		return res, fmt.Errorf("%w: challenge mac has %d bytes", ErrProtocol, len(rest))
	}
	signed := chal[:len(chal)-hsMacLen]
	if !hmac.Equal(rest, mac(cfg.Secret, "braid listener", hello, signed)) {
		return res, fmt.Errorf("%w: the worker does not know the cluster secret", ErrAuth)
	}
	auth := append([]byte(hsMagic), hsAuth)
	auth = append(auth, mac(cfg.Secret, "braid dialer", hello, chal)...)
	if err := c.WriteMsg(auth); err != nil {
		return res, fmt.Errorf("send auth: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	acc, err := c.ReadMsg()
	if err != nil {
		if errors.Is(err, ErrPeerClosed) {
			return res, fmt.Errorf("%w: peer closed during handshake (wrong secret?)", ErrAuth)
		}
		return res, fmt.Errorf("read accept: %w", err)
	}
	body, err := parseHeader(acc, hsAccept)
	if err != nil {
		return res, err
	}
	n := NegotiateStreams(mine.Rec, mine.Max, theirs.Rec, theirs.Max)
	if len(body) != 2 {
		return res, fmt.Errorf("%w: accept has %d bytes", ErrProtocol, len(body))
	}
	granted := int(binary.BigEndian.Uint16(body))
	if granted < 1 || granted > n {
		return res, fmt.Errorf("%w: peer granted %d streams, negotiated %d", ErrProtocol, granted, n)
	}
	return HandshakeResult{Streams: granted, Peer: PeerInfo{Name: theirs.Name}}, nil
}

// ListenHandshake runs the listener's side. On success the caller owns
// release (never nil) and must call it once when the association ends. If
// Admit refuses, the dialer is told why and the error wraps ErrRefused.
func ListenHandshake(ctx context.Context, c HandshakeConn, cfg ListenConfig) (HandshakeResult, func(), error) {
	var res HandshakeResult
	noop := func() {}
	if err := checkSecret(cfg.Secret); err != nil {
		return res, noop, err
	}
	hello, err := c.ReadMsg()
	if err != nil {
		return res, noop, fmt.Errorf("read hello: %w", err)
	}
	theirs, rest, err := parseOffer(hello, hsHello)
	if err != nil {
		return res, noop, err
	}
	if len(rest) != 0 {
		return res, noop, fmt.Errorf("%w: %d trailing bytes after hello", ErrProtocol, len(rest))
	}
	mine, err := normOffer(cfg.RecStreams, cfg.MaxStreams, cfg.Name)
	if err != nil {
		return res, noop, err
	}
	chal := appendOffer(nil, hsChallenge, mine)
	chal = append(chal, mac(cfg.Secret, "braid listener", hello, chal)...)
	if err := c.WriteMsg(chal); err != nil {
		return res, noop, fmt.Errorf("send challenge: %w", err)
	}
	auth, err := c.ReadMsg()
	if err != nil {
		if errors.Is(err, ErrPeerClosed) {
			// A dialer that finds our mac wrong hangs up here.
			return res, noop, fmt.Errorf("%w: peer %q closed during handshake (wrong secret?): %w", ErrAuth, theirs.Name, err)
		}
		return res, noop, fmt.Errorf("read auth: %w", err)
	}
	body, err := parseHeader(auth, hsAuth)
	if err != nil {
		return res, noop, err
	}
	if !hmac.Equal(body, mac(cfg.Secret, "braid dialer", hello, chal)) {
		return res, noop, fmt.Errorf("%w: peer %q does not know the cluster secret", ErrAuth, theirs.Name)
	}
	if err := ctx.Err(); err != nil {
		return res, noop, err
	}
	n := NegotiateStreams(theirs.Rec, theirs.Max, mine.Rec, mine.Max)
	peer := PeerInfo{Name: theirs.Name}
	granted, release := n, noop
	if cfg.Admit != nil {
		g, rel, err := cfg.Admit(peer, n)
		if err != nil {
			reason := err.Error()
			if len(reason) > MaxHandshakeMessage-len(hsMagic)-1 {
				reason = reason[:MaxHandshakeMessage-len(hsMagic)-1]
			}
			_ = c.WriteMsg(append(append([]byte(hsMagic), hsReject), reason...))
			return res, noop, fmt.Errorf("%w: %v", ErrRefused, err)
		}
		if rel != nil {
			release = rel
		}
		if g < 1 || g > n {
			release()
			return res, noop, fmt.Errorf("transport: Admit granted %d of %d streams", g, n)
		}
		granted = g
	}
	acc := append([]byte(hsMagic), hsAccept)
	acc = binary.BigEndian.AppendUint16(acc, uint16(granted))
	if err := c.WriteMsg(acc); err != nil {
		release()
		return res, noop, fmt.Errorf("send accept: %w", err)
	}
	return HandshakeResult{Streams: granted, Peer: peer}, release, nil
}
