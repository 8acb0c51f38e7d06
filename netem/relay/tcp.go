package relay

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// pipe is one forwarded TCP connection: the client's and the relay's own
// connection to the target.
type pipe struct {
	client, up *net.TCPConn
	closeOnce  sync.Once
}

// close closes both connections; copiers blocked on them return.
func (p *pipe) close() {
	p.closeOnce.Do(func() {
		p.client.Close()
		p.up.Close()
	})
}

func (r *Relay) acceptLoop() {
	for {
		c, err := r.tln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select { // a transient error (EMFILE, say): back off briefly
			case <-time.After(10 * time.Millisecond):
			case <-r.closed:
				return
			}
			continue
		}
		r.wg.Go(func() { r.forward(c) })
	}
}

// forward connects to the target for client c and copies both ways until
// both directions have ended.
func (r *Relay) forward(c *net.TCPConn) {
	d := net.Dialer{Timeout: 5 * time.Second}
	uc, err := d.DialContext(r.ctx, "tcp", r.target)
	if err != nil {
		c.Close()
		return
	}
	p := &pipe{client: c, up: uc.(*net.TCPConn)}
	if !r.addPipe(p) {
		p.close()
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { r.copy(p, p.up, p.client) })
	wg.Go(func() { r.copy(p, p.client, p.up) })
	wg.Wait()
	p.close()
	r.mu.Lock()
	delete(r.pipes, p)
	r.mu.Unlock()
}

func (r *Relay) addPipe(p *pipe) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return false
	}
	r.pipes[p] = struct{}{}
	return true
}

// copy moves bytes from src to dst through the gate. At src's end of
// stream it half-closes dst; on any other error it closes the whole pipe
// (the other side then sees a reset or an end, as through a router that
// lost the connection).
func (r *Relay) copy(p *pipe, dst, src *net.TCPConn) {
	buf := make([]byte, bufSize)
	for {
		if !r.gate.wait(r.closed) {
			return
		}
		n, err := src.Read(buf)
		if n > 0 {
			if !r.gate.wait(r.closed) {
				return
			}
			r.saw(buf[:n])
			if _, werr := dst.Write(buf[:n]); werr != nil {
				p.close()
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) && r.gate.wait(r.closed) {
				_ = dst.CloseWrite()
				return
			}
			p.close()
			return
		}
	}
}
