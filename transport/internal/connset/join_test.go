package connset

import (
	"errors"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

const label = "braid test join"

func TestJoinRoundTrip(t *testing.T) {
	token := assocToken{1, 2, 3}
	msg := appendJoin(nil, label, []byte("secret"), token, 7)
	got, i, err := parseJoin(msg, label, []byte("secret"))
	if err != nil || got != token || i != 7 {
		t.Fatalf("parseJoin = %x, %d, %v", got, i, err)
	}
	if _, _, err := parseJoin(msg, label, []byte("other")); !errors.Is(err, transport.ErrAuth) {
		t.Errorf("wrong secret: %v, want ErrAuth", err)
	}
	if _, _, err := parseJoin(msg, "braid other join", []byte("secret")); !errors.Is(err, transport.ErrAuth) {
		t.Errorf("another transport's join: %v, want ErrAuth", err)
	}
	msg[len(joinMagic)] ^= 1
	if _, _, err := parseJoin(msg, label, []byte("secret")); !errors.Is(err, transport.ErrAuth) {
		t.Errorf("tampered token: %v, want ErrAuth", err)
	}
}

func FuzzParseJoin(f *testing.F) {
	f.Add(appendJoin(nil, label, []byte("s"), assocToken{9}, 3))
	f.Add([]byte(joinMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		token, i, err := parseJoin(data, label, []byte("s"))
		if err == nil && string(appendJoin(nil, label, []byte("s"), token, i)) != string(data) {
			t.Fatal("accepted join does not re-encode to itself")
		}
	})
}

// TestRouteMemory: a route that failed is down for routeRetry, then tried
// again; a nil memory remembers nothing.
func TestRouteMemory(t *testing.T) {
	var m RouteMemory
	if m.down("10.0.1.1:7171") {
		t.Fatal("a route never tried is down")
	}
	m.failed("10.0.1.1:7171")
	if !m.down("10.0.1.1:7171") || !m.down("10.0.1.1:7272") || m.down("10.0.2.1:7171") {
		t.Fatal("down should hold the host of the route that failed (any port), and only it")
	}
	m.dead["10.0.1.1"] = time.Now().Add(-time.Second) // routeRetry has passed
	if m.down("10.0.1.1:7171") {
		t.Fatal("the route is still down after routeRetry")
	}
	var none *RouteMemory
	none.failed("10.0.1.1:7171")
	if none.down("10.0.1.1:7171") {
		t.Fatal("a nil memory remembered a route")
	}
}
