package sctp

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/pion/dtls/v3"
	"github.com/pion/dtls/v3/pkg/crypto/prf"
)

// DTLS 1.2 record protection for application data (RFC 6347 §4.1,
// AES-128-GCM as RFC 5288 has it for TLS 1.2), done here rather than by
// pion/dtls once its handshake is done. Through pion/dtls every record an
// association wrote started a goroutine (its Write arms a context), and
// every record it read went from pion/dtls's read goroutine to pion/sctp's
// through a channel: at 100 Mbit/s, tens of thousands of goroutine
// wake-ups a second on each side, most of the CPU time DTLS cost. A
// recordCrypt seals and opens records in the caller's goroutine, in place
// and without allocating, with the keys pion/dtls negotiated, so that the
// records on the wire are the ones pion/dtls would write, and a peer that
// runs pion/dtls for its records reads them and is read alike.
//
// The sequence numbers of the records sealed here start at sealSeqBase,
// far above those pion/dtls gives its own records of the epoch (its
// Finished, its alerts), so that no two records share a number, nor so an
// AES-GCM nonce (the explicit nonce is the epoch and sequence number, as
// pion/dtls and RFC 9325 §7.3 have it). Opening checks the records'
// numbers against a sliding window of replayWindowBits (RFC 6347
// §4.1.2.6) and marks a number only once its record authenticates.

const (
	recordHeaderLen  = 13 // type, version, epoch, sequence number, length
	explicitNonceLen = 8
	gcmTagLen        = 16
	// recordOverhead is what sealing adds to a packet.
	recordOverhead = recordHeaderLen + explicitNonceLen + gcmTagLen
	contentAppData = 23
	dtls12Major    = 0xfe
	dtls12Minor    = 0xfd
	// sealSeqBase is the first sequence number of the records sealed here;
	// maxRecordSeq the last a record may have (48 bits).
	sealSeqBase  = 1 << 40
	maxRecordSeq = 1<<48 - 1
	// recordCipherSuite is the one suite dtlsOptions allows.
	recordCipherSuite = uint16(dtls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)
)

var (
	errRecordState     = errors.New("sctp: DTLS state cannot key record protection")
	errRecordExhausted = errors.New("sctp: DTLS record sequence numbers exhausted")
)

// recordCrypt seals the application data records of one DTLS 1.2
// association and opens its peer's. Seal and open may be called
// concurrently with each other; each takes its own lock.
type recordCrypt struct {
	epoch uint16 // of both directions (1: the first after the handshake)
	seq   atomic.Uint64

	sealMu    sync.Mutex // guards seal's scratch
	seal      cipher.AEAD
	sealIV    [4]byte
	sealNonce [12]byte
	sealAAD   [13]byte

	openMu    sync.Mutex // guards open's scratch and the window
	open      cipher.AEAD
	openIV    [4]byte
	openNonce [12]byte
	openAAD   [13]byte
	window    replayWindow
}

// exportedState is the part of pion/dtls's exported connection state
// (State.MarshalBinary, a gob of its serializedState, whose fields gob
// matches by name) that keys record protection.
type exportedState struct {
	HandshakeComplete                     bool
	LocalEpoch, RemoteEpoch               uint16
	LocalRandom, RemoteRandom             [32]byte
	CipherSuiteID                         uint16
	MasterSecret                          []byte
	IsClient                              bool
	LocalConnectionID, RemoteConnectionID []byte
}

// recordCryptOf keys record protection from dc's negotiated state. An
// error means the state is not one it can key (another cipher suite,
// connection IDs, a pion/dtls whose exported state it cannot read); the
// caller then leaves the records to pion/dtls.
func recordCryptOf(dc *dtls.Conn) (*recordCrypt, error) {
	st, ok := dc.ConnectionState()
	if !ok {
		return nil, fmt.Errorf("%w: no state", errRecordState)
	}
	b, err := st.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errRecordState, err)
	}
	var es exportedState
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&es); err != nil {
		return nil, fmt.Errorf("%w: %v", errRecordState, err)
	}
	return newRecordCrypt(es)
}

// newRecordCrypt derives the write keys and IVs from the master secret
// and the randoms (RFC 5246 §6.3; an AEAD suite has no MAC keys).
func newRecordCrypt(es exportedState) (*recordCrypt, error) {
	switch {
	case !es.HandshakeComplete:
		return nil, fmt.Errorf("%w: handshake not complete", errRecordState)
	case es.CipherSuiteID != recordCipherSuite:
		return nil, fmt.Errorf("%w: cipher suite %#04x", errRecordState, es.CipherSuiteID)
	case len(es.MasterSecret) != 48:
		return nil, fmt.Errorf("%w: master secret of %d bytes", errRecordState, len(es.MasterSecret))
	case es.LocalEpoch == 0 || es.LocalEpoch != es.RemoteEpoch:
		return nil, fmt.Errorf("%w: epochs %d and %d", errRecordState, es.LocalEpoch, es.RemoteEpoch)
	case len(es.LocalConnectionID) != 0 || len(es.RemoteConnectionID) != 0:
		return nil, fmt.Errorf("%w: connection IDs", errRecordState)
	}
	client, server := es.LocalRandom[:], es.RemoteRandom[:]
	if !es.IsClient {
		client, server = server, client
	}
	keys, err := prf.GenerateEncryptionKeys(es.MasterSecret, client, server, 0, 16, 4, sha256.New)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errRecordState, err)
	}
	sealKey, sealIV, openKey, openIV := keys.ClientWriteKey, keys.ClientWriteIV, keys.ServerWriteKey, keys.ServerWriteIV
	if !es.IsClient {
		sealKey, sealIV, openKey, openIV = openKey, openIV, sealKey, sealIV
	}
	r := &recordCrypt{epoch: es.LocalEpoch}
	if r.seal, err = newGCM(sealKey); err != nil {
		return nil, err
	}
	if r.open, err = newGCM(openKey); err != nil {
		return nil, err
	}
	copy(r.sealIV[:], sealIV)
	copy(r.openIV[:], openIV)
	r.seq.Store(sealSeqBase)
	return r, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errRecordState, err)
	}
	return cipher.NewGCM(b)
}

// sealRecord appends to dst the record that carries plain, with the next
// sequence number. It does not allocate when dst has room for
// len(plain)+recordOverhead more bytes.
func (r *recordCrypt) sealRecord(dst, plain []byte) ([]byte, error) {
	seq := r.seq.Add(1) - 1
	if seq > maxRecordSeq {
		return dst, errRecordExhausted
	}
	n := len(plain)
	start := len(dst)
	dst = append(dst, make([]byte, recordHeaderLen+explicitNonceLen)...) // no allocation when it fits
	h := dst[start:]
	h[0], h[1], h[2] = contentAppData, dtls12Major, dtls12Minor
	binary.BigEndian.PutUint64(h[3:11], uint64(r.epoch)<<48|seq)
	binary.BigEndian.PutUint16(h[11:13], uint16(explicitNonceLen+n+gcmTagLen)) //nolint:gosec // G115: a packet is under 64 KiB
	copy(h[13:21], h[3:11])                                                    // the explicit nonce: epoch and sequence number
	r.sealMu.Lock()
	defer r.sealMu.Unlock()
	copy(r.sealNonce[:4], r.sealIV[:])
	copy(r.sealNonce[4:], h[3:11])
	r.sealAAD = additionalData(h[3:11], n)
	return r.seal.Seal(dst, r.sealNonce[:], plain, r.sealAAD[:]), nil
}

// additionalData is a record's AEAD additional data (RFC 5246 §6.2.3.3):
// its epoch and sequence number (seq, 8 bytes), type, version and the
// plaintext's length.
func additionalData(seq []byte, n int) (aad [13]byte) {
	copy(aad[:8], seq)
	aad[8], aad[9], aad[10] = contentAppData, dtls12Major, dtls12Minor
	binary.BigEndian.PutUint16(aad[11:], uint16(n)) //nolint:gosec // G115: a packet is under 64 KiB
	return aad
}

// isAppRecord reports whether datagram b is one whole DTLS 1.2
// application data record, the only kind the fast path opens; anything
// else (handshake, alerts, several records in a datagram) is pion/dtls's.
func isAppRecord(b []byte) bool {
	return len(b) >= recordOverhead && b[0] == contentAppData && b[1] == dtls12Major && b[2] == dtls12Minor &&
		int(binary.BigEndian.Uint16(b[11:13])) == len(b)-recordHeaderLen
}

// openRecord appends to dst the plaintext of rec, an application data
// record (isAppRecord), and reports whether it authenticated, was of the
// current epoch and not a replay. It does not allocate when dst has room.
func (r *recordCrypt) openRecord(dst, rec []byte) ([]byte, bool) {
	if binary.BigEndian.Uint16(rec[3:5]) != r.epoch {
		return dst, false
	}
	seq := binary.BigEndian.Uint64(rec[3:11]) & maxRecordSeq
	body := rec[recordHeaderLen+explicitNonceLen:]
	r.openMu.Lock()
	defer r.openMu.Unlock()
	if r.window.seen(seq) {
		return dst, false
	}
	copy(r.openNonce[:4], r.openIV[:])
	copy(r.openNonce[4:], rec[recordHeaderLen:recordHeaderLen+explicitNonceLen])
	r.openAAD = additionalData(rec[3:11], len(body)-gcmTagLen)
	out, err := r.open.Open(dst, r.openNonce[:], body, r.openAAD[:])
	if err != nil {
		return dst, false
	}
	r.window.mark(seq)
	return out, true
}

// replayWindow remembers which of the last replayWindowBits sequence
// numbers up to the highest seen have been (a ring of bits, as
// WireGuard's; one word of it is kept clear for the next numbers).
type replayWindow struct {
	top  uint64 // the highest number marked
	any  bool   // something is marked
	bits [replayWords]uint64
}

const (
	replayWords      = 16
	replayWindowBits = (replayWords - 1) * 64
)

// seen reports whether seq was marked or is too old to tell.
func (w *replayWindow) seen(seq uint64) bool {
	switch {
	case !w.any || seq > w.top:
		return false
	case w.top-seq >= replayWindowBits:
		return true
	}
	return w.bits[seq/64%replayWords]&(1<<(seq%64)) != 0
}

// mark records seq as seen.
func (w *replayWindow) mark(seq uint64) {
	if !w.any || seq > w.top {
		from, to := w.top/64+1, seq/64
		if !w.any || to-w.top/64 >= replayWords {
			w.bits = [replayWords]uint64{}
		} else {
			for b := from; b <= to; b++ {
				w.bits[b%replayWords] = 0
			}
		}
		w.top, w.any = seq, true
	}
	w.bits[seq/64%replayWords] |= 1 << (seq % 64)
}
