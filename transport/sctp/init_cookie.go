package sctp

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/pion/sctp"
)

// Plaintext SCTP's stateless handshake (see cookie.go). The listener
// answers an INIT with an INIT-ACK it builds itself: the initiate tag and
// TSN it will use, drawn at random, and the parameters pion's own INIT
// would carry (initTemplate), plus a state cookie that holds them and the
// peer's INIT. A COOKIE-ECHO that returns a valid cookie gives both INIT
// chunks back, from which pion builds the association at once (SNAP,
// draft-hancke-tsvwg-snap), and the listener sends the COOKIE-ACK.

const (
	chunkCookieAck     = 11
	paramStateCookie   = 7
	initTagOffset      = 4  // in an INIT chunk: the initiate tag
	initTSNOffset      = 16 // the initial TSN
	maxRemoteInit      = 512
	stateCookieVersion = 1
)

// initTemplate is the INIT chunk a listener's associations announce, with
// zero checksums acceptable or not; a listener makes both once.
type initTemplate struct {
	plain, zero []byte
}

// newInitTemplate makes the INIT chunks pion would send with these
// settings (the tag and TSN are replaced per association).
func newInitTemplate(receiveBuffer int) (initTemplate, error) {
	var t initTemplate
	for _, zero := range []bool{false, true} {
		b, err := sctp.GenerateOutOfBandToken(sctp.WithMaxReceiveBufferSize(uint32(receiveBuffer)), sctp.WithEnableZeroChecksum(zero))
		if err != nil {
			return t, fmt.Errorf("sctp: INIT template: %w", err)
		}
		if zero {
			t.zero = b
		} else {
			t.plain = b
		}
	}
	return t, nil
}

// local is the INIT chunk of an association with tag and tsn.
func (t initTemplate) local(zero bool, tag, tsn uint32) []byte {
	src := t.plain
	if zero {
		src = t.zero
	}
	b := append([]byte(nil), src...)
	binary.BigEndian.PutUint32(b[initTagOffset:], tag)
	binary.BigEndian.PutUint32(b[initTSNOffset:], tsn)
	return b
}

// peerInit returns the INIT chunk of packet p (which isInit accepted),
// without the parameters pion refuses (stripInitParams), or nil if it is
// malformed or too long to carry in a cookie.
func peerInit(p []byte) []byte {
	q := append([]byte(nil), p...)
	q = q[:stripInitParams(q)]
	ch := q[sctpCommonHeader:]
	n := int(binary.BigEndian.Uint16(ch[2:]))
	if n < initFixedLen || n > len(ch) || n > maxRemoteInit {
		return nil
	}
	return ch[:n]
}

// appendInitAck appends the INIT-ACK answering INIT packet init (whose
// chunk is remote) for the peer at the jar's addr: local's fields and
// parameters and a state cookie.
func appendInitAck(b, init, local, cookie []byte) []byte {
	start := len(b)
	b = append(b, init[2:4]...)                                                             // our port: where the INIT went
	b = append(b, init[0:2]...)                                                             // theirs
	b = append(b, init[sctpCommonHeader+initTagOffset:sctpCommonHeader+initTagOffset+4]...) // their tag
	b = append(b, 0, 0, 0, 0)                                                               // checksum
	ch := len(b)
	b = append(b, local...)
	b[ch] = chunkInitAck
	b = padTo4(b, start)
	b = binary.BigEndian.AppendUint16(b, paramStateCookie)
	b = binary.BigEndian.AppendUint16(b, uint16(4+len(cookie)))
	b = append(b, cookie...)
	binary.BigEndian.PutUint16(b[ch+2:], uint16(len(b)-ch))
	b = padTo4(b, start)
	return checksum(b, start)
}

// appendCookieAck appends a COOKIE-ACK answering COOKIE-ECHO packet echo,
// to the peer whose initiate tag is tag.
func appendCookieAck(b, echo []byte, tag uint32) []byte {
	start := len(b)
	b = append(b, echo[2:4]...)
	b = append(b, echo[0:2]...)
	b = binary.BigEndian.AppendUint32(b, tag)
	b = append(b, 0, 0, 0, 0)
	b = append(b, chunkCookieAck, 0, 0, 4)
	return checksum(b, start)
}

// padTo4 pads the packet that starts at start to a multiple of 4 bytes.
func padTo4(b []byte, start int) []byte {
	for (len(b)-start)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// checksum sets the CRC32c of the packet that starts at start.
func checksum(b []byte, start int) []byte {
	binary.LittleEndian.PutUint32(b[start+8:], crc32.Checksum(b[start:], castagnoli))
	return b
}

// stateCookie is what a plaintext SCTP cookie holds (after its time
// stamp): the listener's tag and TSN, whether it accepted zero checksums,
// and the peer's INIT chunk.
type stateCookie struct {
	tag, tsn uint32
	zero     bool
	remote   []byte
}

func (c stateCookie) append(b []byte) []byte {
	b = append(b, stateCookieVersion)
	b = binary.BigEndian.AppendUint32(b, c.tag)
	b = binary.BigEndian.AppendUint32(b, c.tsn)
	z := byte(0)
	if c.zero {
		z = 1
	}
	return append(append(b, z), c.remote...)
}

func parseStateCookie(b []byte) (stateCookie, bool) {
	if len(b) < 10+initFixedLen || b[0] != stateCookieVersion {
		return stateCookie{}, false
	}
	return stateCookie{tag: binary.BigEndian.Uint32(b[1:]), tsn: binary.BigEndian.Uint32(b[5:]), zero: b[9] == 1,
		remote: append([]byte(nil), b[10:]...)}, true
}

// randomTagTSN draws an initiate tag (never 0, RFC 9260 §3.3.2) and a TSN.
func randomTagTSN() (tag, tsn uint32) {
	var r [8]byte
	_, _ = rand.Read(r[:])
	tag, tsn = binary.BigEndian.Uint32(r[:]), binary.BigEndian.Uint32(r[4:])
	return max(tag, 1), tsn
}

// cookieEcho returns the cookie of a packet whose first chunk is a
// COOKIE-ECHO, and whether it is one.
func cookieEcho(p []byte) ([]byte, bool) {
	if checkPacket(p) != nil || p[sctpCommonHeader] != chunkCookieEcho || !checksumValid(p) {
		return nil, false
	}
	n := int(binary.BigEndian.Uint16(p[sctpCommonHeader+2:]))
	return p[sctpCommonHeader+4 : sctpCommonHeader+n], true
}

// snapInit is what a listener's plaintext association starts from: both
// INIT chunks, the ports the peer uses, and the handshake's round trip.
type snapInit struct {
	local, remote []byte
	peerTag       uint32
	ports         [2]uint16 // ours, theirs
	cookie        []byte    // the cookie the peer echoed, to know its retries
	rtt           time.Duration
}
