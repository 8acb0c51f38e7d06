package relay

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"time"
)

// FlowIdle is how long a UDP flow may go unused (no datagram either way,
// dropped ones included) before it ends.
const FlowIdle = 2 * time.Minute

// flow is one UDP client: its address and the relay's socket towards the
// target for it.
type flow struct {
	client netip.AddrPort
	up     *net.UDPConn
	last   atomic.Int64 // unix nanoseconds of the last datagram either way
	ended  atomic.Bool  // the flow has left the table
}

func (f *flow) touch() { f.last.Store(time.Now().UnixNano()) }

func (f *flow) idle() time.Duration { return time.Since(time.Unix(0, f.last.Load())) }

// udpLoop forwards datagrams from clients to the target.
func (r *Relay) udpLoop() {
	buf := make([]byte, bufSize)
	var last *flow // the previous datagram's flow, to skip the map
	for {
		n, from, err := r.uc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a transient error; the relay goes on
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		f := last
		if f == nil || f.client != from || f.ended.Load() {
			if f = r.flow(from); f == nil {
				continue // too many flows, or closing
			}
			last = f
		}
		f.touch()
		if !r.passes(n) {
			continue
		}
		r.saw(buf[:n])
		_, _ = f.up.Write(buf[:n]) // UDP: a failed send is a lost datagram
	}
}

// flow returns the flow of client, starting one if needed; nil if the
// relay is closing, has MaxFlows flows, or cannot open a socket.
func (r *Relay) flow(client netip.AddrPort) *flow {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f := r.flows[client]; f != nil {
		return f
	}
	if r.done || len(r.flows) >= MaxFlows {
		return nil
	}
	uc, err := net.Dial("udp", r.target)
	if err != nil {
		return nil
	}
	up := uc.(*net.UDPConn)
	_ = up.SetReadBuffer(sockBuf)
	_ = up.SetWriteBuffer(sockBuf)
	f := &flow{client: client, up: up}
	f.touch()
	r.flows[client] = f
	r.wg.Go(func() { r.replyLoop(f) })
	return f
}

// replyLoop forwards the target's datagrams back to f's client, and ends
// the flow when it has been idle for FlowIdle or the relay closes.
func (r *Relay) replyLoop(f *flow) {
	defer r.endFlow(f)
	buf := make([]byte, bufSize)
	for {
		_ = f.up.SetReadDeadline(time.Now().Add(FlowIdle - f.idle()))
		n, err := f.up.Read(buf)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			if f.idle() >= FlowIdle {
				return
			}
			continue
		case errors.Is(err, net.ErrClosed):
			return
		case err != nil:
			continue // ICMP unreachable: the target is not there (yet)
		}
		f.touch()
		if !r.passes(n) {
			continue
		}
		r.saw(buf[:n])
		_, _ = r.uc.WriteToUDPAddrPort(buf[:n], f.client)
	}
}

func (r *Relay) endFlow(f *flow) {
	r.mu.Lock()
	if r.flows[f.client] == f {
		delete(r.flows, f.client)
	}
	f.ended.Store(true)
	r.mu.Unlock()
	f.up.Close()
}
