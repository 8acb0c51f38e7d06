package preauth

import "github.com/braidhq/braid/transport"

// Conn wraps a listener's handshake channel so that the slot is marked
// Spoke once the first message has been read whole.
func (s *Slot) Conn(hc transport.HandshakeConn) transport.HandshakeConn {
	return &spokeConn{HandshakeConn: hc, s: s}
}

type spokeConn struct {
	transport.HandshakeConn
	s     *Slot
	spoke bool
}

func (c *spokeConn) ReadMsg() ([]byte, error) {
	p, err := c.HandshakeConn.ReadMsg()
	if err == nil && !c.spoke {
		c.spoke = true
		c.s.Spoke()
	}
	return p, err
}

// Config returns cfg with an Admit that first takes the slot out of the
// gate as Proved: ListenHandshake calls Admit only once the dialer's MAC
// checked out, so from then on the connection is authenticated and no
// longer counts, and its source is known. proved, if not nil, is called
// there too.
func (s *Slot) Config(cfg transport.ListenConfig, proved func()) transport.ListenConfig {
	admit := cfg.Admit
	cfg.Admit = func(p transport.PeerInfo, n int) (int, func(), error) {
		s.Proved()
		if proved != nil {
			proved()
		}
		if admit == nil {
			return n, nil, nil
		}
		return admit(p, n)
	}
	return cfg
}
