package ksctp

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Constants from the Linux uapi header linux/sctp.h.
const (
	solSCTP = 132 // SOL_SCTP == IPPROTO_SCTP

	sctpInitMsg             = 2   // SCTP_INITMSG
	sctpNoDelay             = 3   // SCTP_NODELAY
	sctpStatus              = 14  // SCTP_STATUS
	sctpFragmentInterleave  = 18  // SCTP_FRAGMENT_INTERLEAVE
	sctpPartialDeliveryPt   = 19  // SCTP_PARTIAL_DELIVERY_POINT
	sctpRecvRcvInfo         = 32  // SCTP_RECVRCVINFO
	sctpInterleavingSupport = 125 // SCTP_INTERLEAVING_SUPPORTED
	sctpRemoteUDPEncapsPort = 132 // SCTP_REMOTE_UDP_ENCAPS_PORT

	sctpEventOpt      = 127    // SCTP_EVENT
	snAssocChange     = 0x8001 // SCTP_ASSOC_CHANGE notification type
	sacCommLost       = 1      // SCTP_COMM_LOST
	sacShutdownComp   = 3      // SCTP_SHUTDOWN_COMP
	sacStateOff       = 8      // offsetof(struct sctp_assoc_change, sac_state)
	sizeofAssocChange = 20     // struct sctp_assoc_change without sac_info

	cmsgSndInfo = 2 // SCTP_SNDINFO
	cmsgRcvInfo = 3 // SCTP_RCVINFO

	sctpAbortFlag    = 1 << 2 // SCTP_ABORT in snd_flags
	msgNotification  = 0x8000 // MSG_NOTIFICATION in msg_flags
	sizeofStatus     = 176    // struct sctp_status
	statusInstrmsOff = 16     // offsetof(struct sctp_status, sstat_instrms)
)

// initMsg is struct sctp_initmsg.
type initMsg struct {
	NumOstreams, MaxInstreams, MaxAttempts, MaxInitTimeo uint16
}

// sndInfo is struct sctp_sndinfo.
type sndInfo struct {
	SID, Flags uint16
	PPID       uint32
	Context    uint32
	AssocID    int32
}

// rcvInfo is struct sctp_rcvinfo.
type rcvInfo struct {
	SID, SSN, Flags uint16
	_               uint16
	PPID, TSN       uint32
	CumTSN, Context uint32
	AssocID         int32
}

// event is struct sctp_event.
type event struct {
	AssocID int32
	Type    uint16
	On      uint8
	_       uint8
}

// assocEnded reports whether notification n says the association is gone
// (shutdown complete or communication lost).
func assocEnded(n []byte) bool {
	if len(n) < sizeofAssocChange || binary.NativeEndian.Uint16(n) != snAssocChange {
		return false
	}
	st := binary.NativeEndian.Uint16(n[sacStateOff:])
	return st == sacShutdownComp || st == sacCommLost
}

// assocValue is struct sctp_assoc_value.
type assocValue struct {
	AssocID int32
	Value   uint32
}

const (
	sizeofSndInfo = int(unsafe.Sizeof(sndInfo{}))
	sizeofRcvInfo = int(unsafe.Sizeof(rcvInfo{}))
)

// Compile-time checks of the uapi struct sizes.
var (
	_ [8]byte  = [unsafe.Sizeof(initMsg{})]byte{}
	_ [16]byte = [unsafe.Sizeof(sndInfo{})]byte{}
	_ [28]byte = [unsafe.Sizeof(rcvInfo{})]byte{}
)

// htonl converts a payload protocol id to the network byte order the kernel
// passes through unchanged.
func htonl(v uint32) uint32 {
	if nativeLittle {
		return bits.ReverseBytes32(v)
	}
	return v
}

var nativeLittle = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

// setsockoptStruct sets a socket option whose value is a plain struct.
func setsockoptStruct[T any](fd, level, opt int, v *T) error {
	b := unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
	return unix.SetsockoptString(fd, level, opt, string(b))
}

// sctpStreams reads SCTP_STATUS and returns the association's inbound and
// outbound stream counts.
func sctpStreams(fd int) (in, out int, err error) {
	var buf [sizeofStatus]byte
	l := uint32(len(buf))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), solSCTP, sctpStatus,
		uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return 0, 0, e
	}
	in = int(binary.NativeEndian.Uint16(buf[statusInstrmsOff:]))
	out = int(binary.NativeEndian.Uint16(buf[statusInstrmsOff+2:]))
	return in, out, nil
}

// sndInfoCmsg builds the SCTP_SNDINFO control message for sendmsg.
func sndInfoCmsg(sid uint16, ppid uint32, flags uint16) []byte {
	b := make([]byte, unix.CmsgSpace(sizeofSndInfo))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = solSCTP, cmsgSndInfo
	h.SetLen(unix.CmsgLen(sizeofSndInfo))
	info := (*sndInfo)(unsafe.Pointer(&b[unix.CmsgLen(0)]))
	*info = sndInfo{SID: sid, Flags: flags, PPID: htonl(ppid)}
	return b
}

// parseRcvInfo finds the SCTP_RCVINFO control message in oob.
func parseRcvInfo(oob []byte) (info rcvInfo, ok bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return info, false
	}
	for _, m := range msgs {
		if m.Header.Level == solSCTP && m.Header.Type == cmsgRcvInfo && len(m.Data) >= sizeofRcvInfo {
			info = *(*rcvInfo)(unsafe.Pointer(&m.Data[0]))
			info.PPID = htonl(info.PPID)
			return info, true
		}
	}
	return info, false
}

// Layout of struct sctp_udpencaps {sue_assoc_id, sue_address (struct
// sockaddr_storage, pointer-aligned), sue_port}.
const (
	udpEncapsAddrOff = (4 + ptrSize - 1) &^ (ptrSize - 1)
	udpEncapsPortOff = udpEncapsAddrOff + 128 // sizeof(struct sockaddr_storage)
	ptrSize          = int(unsafe.Sizeof(uintptr(0)))
)

// udpEncaps encodes struct sctp_udpencaps for the future association (id
// 0) and any address, with port in network byte order, as the kernel
// reads it.
func udpEncaps(port uint16) []byte {
	b := make([]byte, (udpEncapsPortOff+2+ptrSize-1)&^(ptrSize-1))
	binary.BigEndian.PutUint16(b[udpEncapsPortOff:], port)
	return b
}
