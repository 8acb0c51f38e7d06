package wire

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Leases (docs/leases.md) ride on stream 0 of an association, beside the
// units and results that stream carries:
//
//	want  = "BW" ver=1 | streams u16 | inflight u32 | lease seq u32
//	        server -> worker: how many of the association's streams it could
//	        keep busy, how many units it has in flight on this worker, and
//	        the sequence number of the last lease it has applied
//	lease = "BL" ver=1 | streams u16 | seq u32
//	        worker -> server: how many of the first streams it lends now;
//	        seq counts the association's leases from 1
//
// The server answers every lease with a want, and while its lease is zero
// it also sends a want whenever its in-flight count changes: so a worker
// that takes its streams back to shut down learns, from a want that names
// that lease, when the server has seen every result and every unit handed
// back. A worker that shuts down hands
// back the units it has not started as results with StatusReturned, after
// the lease that takes its streams back.

// Kind is a data-plane message's type, told by its first two bytes.
type Kind uint8

// Message kinds.
const (
	KindUnknown Kind = iota
	KindUnit
	KindResult
	KindWant
	KindLease
)

func (k Kind) String() string {
	switch k {
	case KindUnit:
		return "unit"
	case KindResult:
		return "result"
	case KindWant:
		return "want"
	case KindLease:
		return "lease"
	}
	return "unknown"
}

// KindOf tells what p is from its magic; it does not validate the rest.
func KindOf(p []byte) Kind {
	if len(p) < 2 || p[0] != 'B' {
		return KindUnknown
	}
	switch p[1] {
	case 'U':
		return KindUnit
	case 'R':
		return KindResult
	case 'W':
		return KindWant
	case 'L':
		return KindLease
	}
	return KindUnknown
}

// Want is what a want message says.
type Want struct {
	Streams  int    // streams the server could keep busy
	InFlight int    // units the server has in flight on the worker
	LeaseSeq uint32 // the last lease the server has applied (0: none yet)
}

// Lease is what a lease message says.
type Lease struct {
	Streams int    // how many of the first streams the worker lends now
	Seq     uint32 // 1 for an association's first lease, then one more each
}

// AppendWant appends a want message (fields clamped to their ranges).
func AppendWant(b []byte, w Want) []byte {
	b = appendCount(b, 'W', w.Streams)
	b = binary.BigEndian.AppendUint32(b, uint32(min(max(w.InFlight, 0), math.MaxUint32)))
	return binary.BigEndian.AppendUint32(b, w.LeaseSeq)
}

// AppendLease appends a lease message (streams clamped to 0..65535).
func AppendLease(b []byte, l Lease) []byte {
	return binary.BigEndian.AppendUint32(appendCount(b, 'L', l.Streams), l.Seq)
}

// ParseWant decodes a want message.
func ParseWant(p []byte) (Want, error) {
	var w Want
	r := reader{b: p}
	r.header('B', 'W')
	w.Streams = int(r.u16())
	w.InFlight = int(r.u32())
	w.LeaseSeq = r.u32()
	return w, r.end("want")
}

// ParseLease decodes a lease message.
func ParseLease(p []byte) (Lease, error) {
	var l Lease
	r := reader{b: p}
	r.header('B', 'L')
	l.Streams = int(r.u16())
	l.Seq = r.u32()
	return l, r.end("lease")
}

func appendCount(b []byte, kind byte, n int) []byte {
	b = append(b, 'B', kind, version)
	return binary.BigEndian.AppendUint16(b, uint16(min(max(n, 0), math.MaxUint16)))
}

// end fails a message with bytes left over.
func (r *reader) end(what string) error {
	if r.err == nil && len(r.b) != 0 {
		return fmt.Errorf("%w: %d bytes after a %s message", ErrMalformed, len(r.b), what)
	}
	return r.err
}
