package ptcp

import (
	"slices"
	"testing"
)

// TestRoute: an association's connections go to the dialed host and to
// each route in turn, on the dialed port; a dial's routes take the place
// of the transport's.
func TestRoute(t *testing.T) {
	tr, err := New(Config{Routes: []string{"10.0.9.1"}})
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := New(Config{})
	for _, c := range []struct {
		tr     *Transport
		routes []string
		want   []string
	}{
		{plain, nil, []string{"10.0.0.1:7171", "10.0.0.1:7171", "10.0.0.1:7171"}},
		{tr, nil, []string{"10.0.0.1:7171", "10.0.9.1:7171", "10.0.0.1:7171", "10.0.9.1:7171"}},
		{tr, []string{"10.0.1.1", "fe80::1"}, []string{"10.0.0.1:7171", "10.0.1.1:7171", "[fe80::1]:7171", "10.0.0.1:7171"}},
	} {
		var got []string
		for i := range c.want {
			to, err := c.tr.route("10.0.0.1:7171", c.routes, i)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, to)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("routes %q (transport's %q): %q, want %q", c.routes, c.tr.cfg.Routes, got, c.want)
		}
	}
}
