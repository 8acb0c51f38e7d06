package sctp

import (
	"github.com/braidhq/braid/transport/internal/sctpwire"
)

// The wire format (stream layout, fragment header, control messages) is
// transport/internal/sctpwire's, shared with the kernel stack
// (transport/ksctp) so that the two interoperate. This file adapts it to the
// names the rest of the package uses.

const (
	fragHeaderLen = sctpwire.FragHeaderLen

	flagLast    = sctpwire.FlagLast
	flagAbandon = sctpwire.FlagAbandon

	ctlCreditLen = sctpwire.CreditLen
)

// The package's protocol constants must be the shared ones (compile-time
// checks: a negative array length does not compile).
var (
	_ [maxFragment - sctpwire.MaxFragment]struct{}
	_ [sctpwire.MaxFragment - maxFragment]struct{}
	_ [initialCredit - sctpwire.InitialCredit]struct{}
	_ [sctpwire.InitialCredit - initialCredit]struct{}
	_ [ppi - sctpwire.PPID]struct{}
	_ [sctpwire.PPID - ppi]struct{}
)

// fragHeader is a decoded fragment header.
type fragHeader struct {
	flags  byte
	msgID  uint32
	offset uint32
	total  uint32
}

// appendFragHeader appends h's wire form to b.
func appendFragHeader(b []byte, h fragHeader) []byte {
	return sctpwire.AppendFragHeader(b, sctpwire.FragHeader{Flags: h.flags, MsgID: h.msgID, Offset: h.offset, Total: h.total})
}

// parseFragment splits a fragment into header and payload and checks that it
// is self-consistent and within maxFrag and the transport's message limit.
func parseFragment(p []byte, maxFrag int) (fragHeader, []byte, error) {
	h, body, err := sctpwire.ParseFragment(p, maxFrag)
	return fragHeader{flags: h.Flags, msgID: h.MsgID, offset: h.Offset, total: h.Total}, body, err
}

// appendCredit appends a credit grant.
func appendCredit(b []byte, stream int, limit uint64) []byte {
	return sctpwire.AppendCredit(b, stream, limit)
}

// parseCredit decodes a control message; streams is the negotiated count. A
// ping decodes as a grant of limit 0 on stream 0, which grant ignores (a
// ping asks for nothing; its datagram has already fed the liveness clock).
func parseCredit(p []byte, streams int) (stream int, limit uint64, err error) {
	c, err := sctpwire.ParseControl(p, streams)
	return c.Stream, c.Limit, err
}
