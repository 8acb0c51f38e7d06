package transport

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHandshakeNameFits(t *testing.T) {
	long4 := strings.Repeat("\U0001D534", 128) // 512 bytes
	for _, tc := range []struct {
		in   string
		n    int
		same bool
	}{
		{"w1", maxNameLen, true},
		{strings.Repeat("n", maxNameLen), maxNameLen, true},
		{strings.Repeat("n", maxNameLen+1), maxNameLen, false},
		{long4, maxNameLen, false},
		{strings.Repeat("n", MaxIDLen), MaxIDLen, true},
		{strings.Repeat("n", 128), MaxIDLen, false},
		{long4, MaxIDLen, false},
	} {
		got := fitted(tc.in, tc.n)
		if (got == tc.in) != tc.same || len(got) > tc.n || !utf8.ValidString(got) {
			t.Errorf("fitted(%d bytes, %d) = %q (%d bytes); want it unchanged: %v, at most %d bytes of UTF-8",
				len(tc.in), tc.n, got, len(got), tc.same, tc.n)
		}
		if !tc.same && (!strings.HasPrefix(tc.in, got[:strings.LastIndexByte(got, '~')]) || fitted(tc.in, tc.n) != got) {
			t.Errorf("fitted(%d bytes, %d) = %q: want a stable prefix of the name and its digest", len(tc.in), tc.n, got)
		}
	}
	a, b := strings.Repeat("n", 300)+"a", strings.Repeat("n", 300)+"b"
	if HandshakeName(a) == HandshakeName(b) || HandshakeID(a) == HandshakeID(b) {
		t.Error("two long names with a common prefix travel as one")
	}
}
