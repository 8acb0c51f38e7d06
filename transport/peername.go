package transport

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"
)

// The handshake carries a name in at most 255 bytes and an ID in at most
// MaxIDLen; a worker's name may be 128 characters, up to 512 bytes of
// UTF-8. HandshakeName and HandshakeID are the forms in which a longer
// name or ID travels, so that both sides can compare what the peer said
// with what they expect: the string itself when it fits, and otherwise
// its longest prefix of whole characters that leaves room for "~" and 16
// hex digits of its SHA-256, which keeps two long names with a common
// prefix apart.

// HandshakeName is the form of name that PeerInfo.Name carries.
func HandshakeName(name string) string { return fitted(name, maxNameLen) }

// HandshakeID is the form of a long identity, such as a worker's name,
// that fits DialConfig.ID and ListenConfig.ID.
func HandshakeID(id string) string { return fitted(id, MaxIDLen) }

// digestLen is the length of fitted's suffix: "~" and 16 hex digits.
const digestLen = 1 + 16

// fitted returns s if it is at most n bytes (n > digestLen), and otherwise
// the prefix and digest described above, at most n bytes.
func fitted(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - digestLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	sum := sha256.Sum256([]byte(s))
	return s[:cut] + "~" + hex.EncodeToString(sum[:8])
}
