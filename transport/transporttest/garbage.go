package transporttest

import (
	"crypto/rand"
	"io"
	"net"
	"time"
)

// TCPGarbage is an Options.Garbage hook for TCP-based transports: it opens
// several raw connections to addr and writes junk on them (random bytes,
// absurd length prefixes, a truncated handshake, nothing at all), then
// closes them. It is safe to run concurrently.
func TCPGarbage(addr string) error {
	random := make([]byte, 4096)
	rand.Read(random)
	junk := [][]byte{
		random,
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{0x00, 0x00},
		append([]byte{0x00, 0x30}, "BRD2\x01 this is a truncated hello"...),
		append([]byte{0x00, 0x30}, "BRD1\x01 this is an old version's hello"...),
		[]byte("GET / HTTP/1.1\r\nHost: braid\r\n\r\n"),
		append([]byte{0x00, 0x36}, "BRDJ0123456789abcdef\x00\x01 a join with a bad token and mac"...),
		{},
	}
	for _, j := range junk {
		if err := tcpJunk(addr, j); err != nil {
			return err
		}
	}
	return nil
}

func tcpJunk(addr string, junk []byte) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write(junk); err != nil {
		return nil // the listener may already have dropped us: fine
	}
	_, _ = io.Copy(io.Discard, c)
	return nil
}
