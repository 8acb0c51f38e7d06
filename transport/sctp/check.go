package sctp

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/braidhq/braid/transport"
	"github.com/pion/logging"
)

// sctpCommonHeader is the size of the SCTP common header.
const sctpCommonHeader = 12

// checkPacket checks an SCTP packet's structure (common header and chunk
// lengths) without its checksum, which pion verifies.
func checkPacket(p []byte) error {
	if len(p) < sctpCommonHeader+4 {
		return fmt.Errorf("%w: SCTP packet of %d bytes", transport.ErrProtocol, len(p))
	}
	if len(p) > maxDatagram {
		return fmt.Errorf("%w: oversize SCTP packet (%d bytes)", transport.ErrProtocol, len(p))
	}
	for off := sctpCommonHeader; off < len(p); {
		if len(p)-off < 4 {
			return fmt.Errorf("%w: truncated SCTP chunk header", transport.ErrProtocol)
		}
		n := int(binary.BigEndian.Uint16(p[off+2:]))
		if n < 4 || off+n > len(p) {
			return fmt.Errorf("%w: SCTP chunk length %d at %d of %d", transport.ErrProtocol, n, off, len(p))
		}
		off += (n + 3) &^ 3
	}
	return nil
}

// isInit tells whether p is a well-formed packet whose first chunk is an
// INIT, with the flags every sender sets (none): a DTLS ClientHello has
// its handshake type, 1, there (dtls.go).
func isInit(p []byte) bool {
	return checkPacket(p) == nil && p[sctpCommonHeader] == chunkInit && p[sctpCommonHeader+1] == 0
}

// garbageHook forwards "the peer sent garbage" to whoever owns the
// association at the moment: first the handshake, then the association.
type garbageHook struct {
	fn atomic.Pointer[func(error)]
}

func (g *garbageHook) set(fn func(error)) { g.fn.Store(&fn) }

func (g *garbageHook) fire(err error) {
	if fn := g.fn.Load(); fn != nil {
		(*fn)(err)
	}
}

// pionLogs adapts pion's leveled logger to slog and turns pion's "bad packet"
// warnings (it drops such packets silently) into garbage reports.
type pionLogs struct {
	log  func(msg string)
	hook *garbageHook
}

func (f pionLogs) NewLogger(string) logging.LeveledLogger { return pionLogger(f) }

type pionLogger pionLogs

func (l pionLogger) warn(msg string) {
	if strings.Contains(msg, "Heartbeat without ParamHeartbeatInfo") {
		return // our own keep-alive, see liveness.go
	}
	l.log(msg)
	if strings.Contains(msg, "unable to parse SCTP packet") || strings.Contains(msg, "failed validating packet") {
		l.hook.fire(fmt.Errorf("%w: %s", transport.ErrProtocol, msg))
	}
}

func (pionLogger) Trace(string)                {}
func (pionLogger) Tracef(string, ...any)       {}
func (pionLogger) Debug(string)                {}
func (pionLogger) Debugf(string, ...any)       {}
func (pionLogger) Info(string)                 {}
func (pionLogger) Infof(string, ...any)        {}
func (l pionLogger) Warn(m string)             { l.warn(m) }
func (l pionLogger) Warnf(f string, a ...any)  { l.warn(fmt.Sprintf(f, a...)) }
func (l pionLogger) Error(m string)            { l.log(m) }
func (l pionLogger) Errorf(f string, a ...any) { l.log(fmt.Sprintf(f, a...)) }
