package transport

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// The braid handshake (version 2) runs on an association's first channel
// before any stream carries data:
//
//	dialer   -> listener  hello     {nonceD, recD, maxD, livenessD, epochD, nameD, idD}
//	listener -> dialer    challenge {nonceL, recL, maxL, livenessL, epochL, nameL, idL, macL}
//	dialer   -> listener  auth      {macD}
//	listener -> dialer    accept    {streams}  |  reject {reason}
//
// macL = HMAC-SHA256(secret, "braid listener" || hello || challenge-without-mac)
// macD = HMAC-SHA256(secret, "braid dialer"   || hello || challenge)
//
// Each side proves it knows the secret without sending it, and the nonces make
// the proofs single-use; the macs cover both offers whole, so neither side's
// identity, epoch or liveness can be altered on the way. The listener
// admits the association (Admit) only after the dialer's mac checks out. Streams
// are negotiated as NegotiateStreams and the liveness bound as
// NegotiateLiveness. handshake_offer.go has the byte layout. A version-1
// peer (magic "BRD1") is refused with an error that says so.

const (
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

// HandshakeResult is what a finished handshake agreed on.
type HandshakeResult struct {
	Streams int
	Peer    PeerInfo
	// Liveness is the negotiated liveness bound: the association ends once
	// the peer has been silent this long.
	Liveness time.Duration
	// PeerPingsEach tells that the peer pings each idle connection of an
	// association, as braid does from the version that watches each one on
	// its own. An older peer pings one, so with it silence is judged over
	// the association as a whole.
	PeerPingsEach bool
	// IdleLiveness is the negotiated idle bound, zero if either side
	// offered no idle factor: an association that has carried nothing for
	// the liveness bound may say so in its pings and then stay silent for
	// this long (transport/internal/mux/liveness.go). Both sides arrive at
	// the same value: the smaller idle factor times the negotiated
	// liveness, at most MaxLiveness.
	IdleLiveness time.Duration
}

// negotiated is the liveness bound both sides arrive at. A peer older
// than the flags reads our offer as far beyond MaxLiveness (see
// flagPingsEach) and so keeps its own; we keep it too.
func negotiated(mine, theirs Offer) time.Duration {
	if !theirs.PingsEach {
		return theirs.Liveness
	}
	return NegotiateLiveness(mine.Liveness, theirs.Liveness)
}

// negotiatedIdle is the idle bound both sides arrive at for liveness (the
// negotiated one), or zero.
func negotiatedIdle(mine, theirs Offer, liveness time.Duration) time.Duration {
	f := min(mine.IdleFactor, theirs.IdleFactor)
	if f == 0 || !theirs.PingsEach {
		return 0
	}
	return min(time.Duration(f)*liveness, MaxLiveness)
}

// result is what a handshake agreed on, once the streams are known.
func result(streams int, mine, theirs Offer) HandshakeResult {
	live := negotiated(mine, theirs)
	return HandshakeResult{Streams: streams, Peer: peerInfo(theirs), Liveness: live,
		PeerPingsEach: theirs.PingsEach, IdleLiveness: negotiatedIdle(mine, theirs, live)}
}

func checkSecret(secret []byte) error {
	if len(secret) == 0 {
		return fmt.Errorf("%w: no cluster secret configured", ErrAuth)
	}
	return nil
}

func peerInfo(o Offer) PeerInfo { return PeerInfo{Name: o.Name, ID: o.ID, Epoch: o.Epoch} }

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
	mine, err := normOffer(cfg.RecStreams, cfg.MaxStreams, cfg.Name, cfg.ID, cfg.Epoch, cfg.Liveness, cfg.IdleFactor)
	if err != nil {
		return res, err
	}
	hello := appendOffer(nil, hsHello, mine)
	if err := c.WriteMsg(hello); err != nil {
		return res, fmt.Errorf("send hello: %w", err)
	}
	chal, err := c.ReadMsg()
	if err != nil {
		if errors.Is(err, ErrPeerClosed) {
			return res, fmt.Errorf("read challenge: %w (a listener running an older braid, handshake v1, hangs up here)", err)
		}
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
	return result(granted, mine, theirs), nil
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
	mine, err := normOffer(cfg.RecStreams, cfg.MaxStreams, cfg.Name, cfg.ID, cfg.Epoch, cfg.Liveness, cfg.IdleFactor)
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
	peer := peerInfo(theirs)
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
	return result(granted, mine, theirs), release, nil
}
