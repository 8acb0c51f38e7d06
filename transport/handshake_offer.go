package transport

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"time"
)

// The wire form of the handshake messages (version 2, magic "BRD2"). Every
// message starts with the magic and a type byte. Hello and challenge carry
// an offer:
//
//	magic "BRD2" | type u8 | nonce [32] | rec u16 | max u16 | liveness_ms u32 |
//	epoch u64 | name_len u8 | name | id_len u8 | id
//
// liveness_ms's top byte holds flags, which a peer older than them takes
// for part of a very long liveness offer, clamped to MaxLiveness and so
// never the smaller one: it keeps its own bound, and a side that sees no
// flags keeps the peer's too. flagPingsEach says that the side pings each
// idle connection of an association (see HandshakeResult.PeerPingsEach);
// the top nibble is the side's idle factor (0: none; see
// HandshakeResult.IdleLiveness), which a peer older than it ignores, as it
// ignores every flag it does not know.
//
// followed, in the challenge, by the listener's 32-byte mac. Auth is
// {magic, type, mac}; accept is {magic, type, streams u16}; reject is {magic,
// type, reason text}. All integers are big endian.
const (
	hsMagic   = "BRD2"
	hsMagicV1 = "BRD1"

	flagPingsEach = 0x01 // in the top byte of liveness_ms
	idleShift     = 28   // the idle factor: the top nibble of liveness_ms
)

// Offer is one side's half of the negotiation, as sent in a hello or a
// challenge.
type Offer struct {
	Nonce    [hsNonceLen]byte
	Rec, Max int
	// Liveness is the offered liveness bound, in [MinLiveness, MaxLiveness]
	// once normalised (the wire carries whole milliseconds).
	Liveness time.Duration
	Epoch    uint64
	Name     string
	ID       string
	// PingsEach is flagPingsEach: every side of this version sets it.
	PingsEach bool
	// IdleFactor is the offered idle factor, 0 or 2..MaxIdleFactor.
	IdleFactor int
}

// offerFixedLen is the length of an offer's fixed-size fields.
const offerFixedLen = hsNonceLen + 2 + 2 + 4 + 8

// normOffer builds this side's offer from its configuration with a fresh
// nonce. Only an oversize ID is an error; other values are normalised.
func normOffer(rec, maxS int, name, id string, epoch uint64, liveness time.Duration, idle int) (Offer, error) {
	var o Offer
	if len(id) > MaxIDLen {
		return o, fmt.Errorf("transport: ID of %d bytes, at most %d", len(id), MaxIDLen)
	}
	if rec <= 0 {
		rec = 1
	}
	if maxS <= 0 || maxS > MaxStreams {
		maxS = MaxStreams
	}
	name = HandshakeName(name)
	o.Rec, o.Max, o.Name = min(rec, maxS), maxS, name
	o.ID, o.Epoch, o.Liveness, o.PingsEach = id, epoch, NormLiveness(liveness), true
	o.IdleFactor = normIdleFactor(idle)
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
	ms := uint32(o.Liveness / time.Millisecond)
	if o.PingsEach {
		ms |= flagPingsEach << 24
	}
	ms |= uint32(o.IdleFactor) << idleShift
	b = binary.BigEndian.AppendUint32(b, ms)
	b = binary.BigEndian.AppendUint64(b, o.Epoch)
	b = append(b, byte(len(o.Name)))
	b = append(b, o.Name...)
	b = append(b, byte(len(o.ID)))
	return append(b, o.ID...)
}

// IsAccept reports whether p is a handshake's accept message, the one a
// listener sends once the dialer has proved it knows the secret. A
// transport that holds back what a peer sends before that point uses it to
// tell when the point is reached.
func IsAccept(p []byte) bool {
	return len(p) > len(hsMagic) && string(p[:len(hsMagic)]) == hsMagic && p[len(hsMagic)] == hsAccept
}

// parseHeader checks magic and type and returns the body.
func parseHeader(p []byte, want byte) ([]byte, error) {
	if len(p) >= len(hsMagicV1) && string(p[:len(hsMagicV1)]) == hsMagicV1 {
		return nil, fmt.Errorf("%w: peer speaks braid handshake v1 (an older braid): upgrade it", ErrProtocol)
	}
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

// parseOffer decodes a hello (typ hsHello) or a challenge (typ
// hsChallenge, whose trailing mac is returned as rest).
func parseOffer(p []byte, typ byte) (o Offer, rest []byte, err error) {
	body, err := parseHeader(p, typ)
	if err != nil {
		return o, nil, err
	}
	if len(body) < offerFixedLen+1 {
		return o, nil, fmt.Errorf("%w: handshake offer truncated", ErrProtocol)
	}
	copy(o.Nonce[:], body)
	body = body[hsNonceLen:]
	o.Rec = int(binary.BigEndian.Uint16(body))
	o.Max = int(binary.BigEndian.Uint16(body[2:]))
	ms := binary.BigEndian.Uint32(body[4:])
	o.PingsEach = ms>>24&flagPingsEach != 0
	o.IdleFactor = normIdleFactor(int(ms >> idleShift))
	ms &= 1<<24 - 1 // the other flags are for later versions
	o.Epoch = binary.BigEndian.Uint64(body[8:])
	body = body[16:]
	if o.Name, body, err = cutString(body, "name", maxNameLen); err != nil {
		return o, nil, err
	}
	if o.ID, rest, err = cutString(body, "id", MaxIDLen); err != nil {
		return o, nil, err
	}
	if o.Rec < 1 || o.Max < 1 || o.Max > MaxStreams || o.Rec > o.Max {
		return o, nil, fmt.Errorf("%w: bad stream offer rec=%d max=%d", ErrProtocol, o.Rec, o.Max)
	}
	if ms == 0 {
		return o, nil, fmt.Errorf("%w: zero liveness offered", ErrProtocol)
	}
	o.Liveness = NormLiveness(time.Duration(ms) * time.Millisecond)
	return o, rest, nil
}

// cutString splits a length-prefixed string (one length byte) off p.
func cutString(p []byte, what string, maxLen int) (string, []byte, error) {
	if len(p) < 1 {
		return "", nil, fmt.Errorf("%w: handshake %s length missing", ErrProtocol, what)
	}
	n := int(p[0])
	switch {
	case n > maxLen:
		return "", nil, fmt.Errorf("%w: handshake %s of %d bytes, at most %d", ErrProtocol, what, n, maxLen)
	case len(p)-1 < n:
		return "", nil, fmt.Errorf("%w: handshake %s truncated", ErrProtocol, what)
	}
	return string(p[1 : 1+n]), p[1+n:], nil
}
