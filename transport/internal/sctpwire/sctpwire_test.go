package sctpwire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/braidhq/braid/transport"
)

func TestFragmentRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		h    FragHeader
		body []byte
	}{
		{FragHeader{Flags: FlagLast, MsgID: 7, Offset: 0, Total: 3}, []byte("abc")},
		{FragHeader{MsgID: 1 << 31, Offset: 10, Total: 20}, []byte("0123456789")},
		{FragHeader{Flags: FlagLast}, nil},
		{FragHeader{Flags: FlagAbandon, MsgID: 9, Offset: 5, Total: 9}, nil},
	} {
		p := append(AppendFragHeader(nil, tc.h), tc.body...)
		if len(p) != FragHeaderLen+len(tc.body) {
			t.Fatalf("%+v: %d bytes on the wire", tc.h, len(p))
		}
		h, body, err := ParseFragment(p, MaxFragment)
		if err != nil || h != tc.h || !bytes.Equal(body, tc.body) {
			t.Fatalf("%+v: parsed %+v %q %v", tc.h, h, body, err)
		}
	}
}

// TestFragmentWireForm pins the byte layout both stacks must agree on.
func TestFragmentWireForm(t *testing.T) {
	got := AppendFragHeader(nil, FragHeader{Flags: FlagLast, MsgID: 0x01020304, Offset: 0x05060708, Total: 0x090a0b0c})
	want := []byte{1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	if !bytes.Equal(got, want) {
		t.Fatalf("header % x, want % x", got, want)
	}
	if got := AppendCredit(nil, 0x0102, 0x0304); !bytes.Equal(got, []byte{1, 1, 2, 0, 0, 0, 0, 0, 0, 3, 4}) {
		t.Fatalf("credit % x", got)
	}
	if got := AppendPing(nil); !bytes.Equal(got, []byte{2}) {
		t.Fatalf("ping % x", got)
	}
}

func TestParseFragmentRejects(t *testing.T) {
	frag := func(h FragHeader, n int) []byte { return append(AppendFragHeader(nil, h), make([]byte, n)...) }
	for name, tc := range map[string]struct {
		p    []byte
		want error
	}{
		"short":          {[]byte{1, 2, 3}, transport.ErrProtocol},
		"flags":          {frag(FragHeader{Flags: 4, Total: 1}, 1), transport.ErrProtocol},
		"last+abandon":   {frag(FragHeader{Flags: FlagLast | FlagAbandon}, 0), transport.ErrProtocol},
		"oversize":       {frag(FragHeader{Total: 1 << 20}, 100), transport.ErrProtocol},
		"too large":      {frag(FragHeader{Total: transport.MaxMessageSize + 1}, 0), transport.ErrMessageTooLarge},
		"past end":       {frag(FragHeader{Offset: 8, Total: 10}, 3), transport.ErrProtocol},
		"short last":     {frag(FragHeader{Flags: FlagLast, Total: 10}, 3), transport.ErrProtocol},
		"abandon+body":   {frag(FragHeader{Flags: FlagAbandon, Total: 10}, 3), transport.ErrProtocol},
		"offset wraps":   {frag(FragHeader{Offset: 0xffffffff, Total: 10}, 3), transport.ErrProtocol},
		"payload > frag": {frag(FragHeader{Flags: FlagLast, Total: 65}, 65), transport.ErrProtocol},
	} {
		max := MaxFragment
		if name == "payload > frag" || name == "oversize" {
			max = 64
		}
		if _, _, err := ParseFragment(tc.p, max); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

func TestParseControl(t *testing.T) {
	c, err := ParseControl(AppendCredit(nil, 3, 1<<40), 4)
	if err != nil || c != (Control{Type: CtlCredit, Stream: 3, Limit: 1 << 40}) {
		t.Fatalf("credit: %+v %v", c, err)
	}
	if c, err := ParseControl(AppendPing(nil), 4); err != nil || c.Type != CtlPing {
		t.Fatalf("ping: %+v %v", c, err)
	}
	for name, p := range map[string][]byte{
		"empty":        nil,
		"stream range": AppendCredit(nil, 4, 1),
		"short credit": AppendCredit(nil, 1, 1)[:10],
		"long ping":    {CtlPing, 0},
		"unknown":      {9},
	} {
		if _, err := ParseControl(p, 4); !errors.Is(err, transport.ErrProtocol) {
			t.Errorf("%s: %v, want ErrProtocol", name, err)
		}
	}
}

// FuzzFragment checks that ParseFragment never panics, that what it accepts
// is within its limits, and that it re-encodes to the same bytes.
func FuzzFragment(f *testing.F) {
	f.Add(append(AppendFragHeader(nil, FragHeader{Flags: FlagLast, Total: 3}), "abc"...))
	f.Add(AppendFragHeader(nil, FragHeader{Flags: FlagAbandon, MsgID: 1, Offset: 4, Total: 8}))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, p []byte) {
		h, body, err := ParseFragment(p, 1024)
		if err != nil {
			return
		}
		if len(body) > 1024 || uint64(h.Offset)+uint64(len(body)) > uint64(h.Total) || h.Total > transport.MaxMessageSize {
			t.Fatalf("accepted %+v with %d bytes", h, len(body))
		}
		if re := append(AppendFragHeader(nil, h), body...); !bytes.Equal(re, p) {
			t.Fatalf("re-encoded % x, want % x", re, p)
		}
	})
}

// FuzzControl does the same for control messages.
func FuzzControl(f *testing.F) {
	f.Add(AppendCredit(nil, 1, 99))
	f.Add(AppendPing(nil))
	f.Fuzz(func(t *testing.T, p []byte) {
		c, err := ParseControl(p, 8)
		if err != nil {
			return
		}
		var re []byte
		switch c.Type {
		case CtlCredit:
			if c.Stream >= 8 {
				t.Fatalf("accepted stream %d", c.Stream)
			}
			re = AppendCredit(nil, c.Stream, c.Limit)
		case CtlPing:
			re = AppendPing(nil)
		default:
			t.Fatalf("accepted type %d", c.Type)
		}
		if !bytes.Equal(re, p) {
			t.Fatalf("re-encoded % x, want % x", re, p)
		}
	})
}
