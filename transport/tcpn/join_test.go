package tcpn

import (
	"errors"
	"testing"

	"github.com/braidhq/braid/transport"
)

func TestJoinRoundTrip(t *testing.T) {
	token := [tokenLen]byte{1, 2, 3}
	msg := appendJoin(nil, []byte("secret"), token, 7)
	got, i, err := parseJoin(msg, []byte("secret"))
	if err != nil || got != token || i != 7 {
		t.Fatalf("parseJoin = %x, %d, %v", got, i, err)
	}
	if _, _, err := parseJoin(msg, []byte("other")); !errors.Is(err, transport.ErrAuth) {
		t.Errorf("wrong secret: %v, want ErrAuth", err)
	}
	msg[len(joinMagic)] ^= 1
	if _, _, err := parseJoin(msg, []byte("secret")); !errors.Is(err, transport.ErrAuth) {
		t.Errorf("tampered token: %v, want ErrAuth", err)
	}
}

func FuzzParseJoin(f *testing.F) {
	f.Add(appendJoin(nil, []byte("s"), [tokenLen]byte{9}, 3))
	f.Add([]byte(joinMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		token, i, err := parseJoin(data, []byte("s"))
		if err == nil && string(appendJoin(nil, []byte("s"), token, i)) != string(data) {
			t.Fatal("accepted join does not re-encode to itself")
		}
	})
}
