// Package alive is the keep-alive machinery shared by braid's transports
// that have no usable dead-peer detection of their own (see
// transport/liveness.go): a Clock of when an association last heard from
// its peer and last sent to it, and a Loop that sends a sign of life when
// the association has been quiet and declares the peer lost when it has
// been silent for the liveness bound.
package alive

import (
	"sync/atomic"
	"time"
)

// Clock records when an association last received from and last sent to
// its peer. Any goroutine may call its methods; the zero Clock must be
// started before use.
type Clock struct {
	t0       time.Time    // origin of the readings below (monotonic)
	lastRecv atomic.Int64 // Now() of the last sign of life from the peer
	lastSend atomic.Int64 // Now() of the last thing sent to the peer
}

// Start sets the clock's origin; the start counts as traffic both ways.
func (c *Clock) Start() {
	c.t0 = time.Now()
	c.lastRecv.Store(0)
	c.lastSend.Store(0)
}

// Now is the time since Start.
func (c *Clock) Now() time.Duration { return time.Since(c.t0) }

// Heard records a sign of life from the peer.
func (c *Clock) Heard() { c.lastRecv.Store(int64(c.Now())) }

// Sent records that something left for the peer.
func (c *Clock) Sent() { c.lastSend.Store(int64(c.Now())) }

// LastRecv and LastSend are the Now readings of the last Heard and Sent.
func (c *Clock) LastRecv() time.Duration { return time.Duration(c.lastRecv.Load()) }
func (c *Clock) LastSend() time.Duration { return time.Duration(c.lastSend.Load()) }
