package frame

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/braidhq/braid/transport"
)

func TestRoundTrip(t *testing.T) {
	msgs := map[uint16][]byte{0: bytes.Repeat([]byte("a"), 3*MaxPayload+5), 1: []byte("hello"), 2: {}}
	var wire []byte
	for s, m := range msgs {
		for off := 0; ; {
			n := min(len(m)-off, MaxPayload)
			h := Header{Type: Data, Stream: s, Len: uint32(n), MsgLen: uint32(len(m))}
			if off+n == len(m) {
				h.Flags = FlagEnd
			}
			wire = append(h.Append(wire), m[off:off+n]...)
			if off += n; off == len(m) {
				break
			}
		}
	}
	wire = Header{Type: Ping}.Append(wire)
	wire = Header{Type: Close}.Append(wire)
	r := NewReader(bytes.NewReader(wire), 3)
	got := map[uint16][]byte{}
	pings := 0
	for {
		h, msg, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if h.Type == Close {
			break
		}
		if h.Type == Ping {
			pings++
			if msg != nil {
				t.Errorf("ping frame yields %d bytes", len(msg))
			}
		}
		if msg != nil {
			got[h.Stream] = msg
		}
	}
	if pings != 1 {
		t.Errorf("read %d pings, want 1", pings)
	}
	for s, m := range msgs {
		if !bytes.Equal(got[s], m) {
			t.Errorf("stream %d: got %d bytes, want %d", s, len(got[s]), len(m))
		}
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Errorf("after the last frame: %v, want io.EOF", err)
	}
}

func TestParseRejects(t *testing.T) {
	bad := []Header{
		{Type: 9},
		{Type: Ping, Len: 1},
		{Type: Ping, Stream: 1},
		{Type: Ping, Flags: FlagEnd},
		{Type: Ping, Flags: FlagIdle | FlagEnd},
		{Type: Close, Flags: FlagIdle},
		{Type: Data, Len: 1, MsgLen: 1, Flags: FlagIdle},
		{Type: Ping, MsgLen: 4},
		{Type: Data, Stream: 4, Len: 1, MsgLen: 1, Flags: FlagEnd},
		{Type: Data, Len: 1, MsgLen: 1, Flags: 0x80},
		{Type: Data, Len: MaxPayload + 1, MsgLen: MaxPayload + 1},
		{Type: Data, Len: 2, MsgLen: 1},
		{Type: Data, Len: 0, MsgLen: 5},
		{Type: Close, Len: 1},
		{Type: Abort, Len: MaxReason + 1},
	}
	for _, h := range bad {
		if _, err := Parse(h.Append(nil), 4); !errors.Is(err, transport.ErrProtocol) {
			t.Errorf("%+v: %v, want ErrProtocol", h, err)
		}
	}
	idle := Header{Type: Ping, Flags: FlagIdle}
	if got, err := Parse(idle.Append(nil), 4); err != nil || got != idle {
		t.Errorf("idle ping: %+v, %v", got, err)
	}
	h := Header{Type: Data, Len: 1, MsgLen: transport.MaxMessageSize + 1}
	if _, err := Parse(h.Append(nil), 4); !errors.Is(err, transport.ErrMessageTooLarge) {
		t.Errorf("oversize message: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(Header{Type: Data, Stream: 1, Len: 5, MsgLen: 5, Flags: FlagEnd}.Append(nil))
	f.Add(Header{Type: Abort, Len: 3}.Append(nil))
	f.Add(Header{Type: Ping}.Append(nil))
	f.Add(Header{Type: Ping, Flags: FlagIdle}.Append(nil))
	f.Add(Header{Type: Block, Stream: 2, Len: 5, MsgLen: 9, Seq: 7}.Append(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Parse(data, 8)
		if err != nil {
			return
		}
		if got := h.Append(nil)[:HeaderLen]; !bytes.Equal(got, data[:HeaderLen]) {
			t.Fatalf("re-encoding %x gives %x", data[:HeaderLen], got)
		}
	})
}

func FuzzReader(f *testing.F) {
	f.Add(append(Header{Type: Data, Stream: 1, Len: 5, MsgLen: 5, Flags: FlagEnd}.Append(nil), "hello"...))
	f.Add(append(Header{Type: Data, Len: 2, MsgLen: 4}.Append(nil), "he"...))
	f.Add(append(Header{Type: Ping}.Append(nil), Header{Type: Data, Stream: 1, Len: 1, MsgLen: 1, Flags: FlagEnd}.Append(nil)...))
	f.Add(append(Header{Type: Block, Stream: 3, Len: 2, MsgLen: 4, Seq: 1 << 30}.Append(nil), "he"...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), 4)
		for {
			h, msg, err := r.Next()
			if err != nil {
				return
			}
			if h.Type == Data && msg != nil && len(msg) != int(h.MsgLen) {
				t.Fatalf("message of %d bytes, header says %d", len(msg), h.MsgLen)
			}
			if h.Type == Block && len(msg) != int(h.Len) {
				t.Fatalf("block of %d bytes, header says %d", len(msg), h.Len)
			}
		}
	})
}

// TestGrowsWithArrivals checks that a frame announcing a maximum-size
// message allocates for the bytes that came, not for the announcement.
func TestGrowsWithArrivals(t *testing.T) {
	wire := append(Header{Type: Data, Len: 1, MsgLen: transport.MaxMessageSize}.Append(nil), 'x')
	r := NewReader(bytes.NewReader(wire), 1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, msg, err := r.Next(); err != nil || msg != nil {
		t.Fatalf("Next = %q, %v", msg, err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("allocated %d bytes for a 1-byte frame of a %d-byte message", got, transport.MaxMessageSize)
	}
}

// TestBlockRoundTrip checks that a Block frame's sequence number, after the
// common header, survives the Reader.
func TestBlockRoundTrip(t *testing.T) {
	h := Header{Type: Block, Stream: 3, Len: 2, MsgLen: 7, Seq: 0xfffffffe}
	wire := append(h.Append(nil), "hi"...)
	if len(wire) != BlockHeaderLen+2 {
		t.Fatalf("encoded %d bytes, want %d", len(wire), BlockHeaderLen+2)
	}
	got, msg, err := NewReader(bytes.NewReader(wire), 4).Next()
	if err != nil || got != h || string(msg) != "hi" {
		t.Fatalf("Next = %+v, %q, %v; want %+v, \"hi\"", got, msg, err, h)
	}
	if _, _, err := NewReader(bytes.NewReader(wire[:HeaderLen+2]), 4).Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated sequence number: %v, want io.ErrUnexpectedEOF", err)
	}
}
