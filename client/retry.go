package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/braidhq/braid/api"
)

// DefaultRetryFor is how long a call rides through an unreachable server
// when Retry.For is zero.
const DefaultRetryFor = 30 * time.Second

// The backoff between attempts: the first wait is about firstBackoff, each
// next one about twice the last, up to maxBackoff. Each wait is drawn from
// [d/2, d) so that clients cut off by one restart do not all come back at
// once.
const (
	firstBackoff = 100 * time.Millisecond
	maxBackoff   = 2 * time.Second
)

// Retry is how a Client rides through a server it cannot reach for a
// while, such as one that is restarting: which failures it waits out is in
// the package doc ("Riding through restarts"). The zero Retry is the
// default policy.
type Retry struct {
	// For is the longest outage a call rides through: a call gives up once
	// the server has not answered for this long since the attempt that
	// started the outage failed, with an error that wraps the last
	// attempt's. An answer from the server ends the outage (Wait's
	// long-poll and event stream ride through any number of outages). The
	// call's context bounds it too. Zero means DefaultRetryFor (30 s); a negative For turns
	// retrying off; math.MaxInt64 retries until the context ends.
	For time.Duration
	// Notify, if non-nil, is called before each wait with the error of the
	// attempt that failed and the length of the wait. It is called on the
	// goroutine that made the call, and from concurrent calls concurrently.
	Notify func(err error, wait time.Duration)
	// Recovered, if non-nil, is called when the server answers a call for
	// which Notify was called: the outage is over. It is called on the
	// goroutine that made the call.
	Recovered func()
}

func (r Retry) limit() time.Duration {
	if r.For == 0 {
		return DefaultRetryFor
	}
	return r.For
}

// outage is one call's retry state: when the server stopped answering, the
// last error, and how long the next wait is. The zero outage means the
// server answers.
type outage struct {
	policy Retry
	since  time.Time     // when the first failed attempt of this outage ended
	last   error         // the last attempt's error
	next   time.Duration // the next wait, before jitter
}

// failed decides whether an attempt that failed with err is made again:
// it waits and returns nil if so, and returns the error to give back to the
// caller if not. repeatable says whether the call may be repeated after a
// failure that happened once the request may have been sent.
func (o *outage) failed(ctx context.Context, err error, repeatable bool) error {
	if ctx.Err() != nil {
		return o.interrupted(ctx, err)
	}
	if o.policy.For < 0 || !transient(err, repeatable) {
		return err
	}
	now := time.Now()
	if o.since.IsZero() {
		o.since, o.next = now, firstBackoff
	}
	o.last = err
	left := o.policy.limit() - now.Sub(o.since)
	if left <= 0 {
		return fmt.Errorf("gave up after %v: %w", now.Sub(o.since).Round(time.Millisecond), err)
	}
	wait := min(jitter(o.next), left)
	o.next = min(2*o.next, maxBackoff)
	if o.policy.Notify != nil {
		o.policy.Notify(err, wait)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return o.interrupted(ctx, err)
	case <-t.C:
		return nil
	}
}

// interrupted is the error of a call whose context ended: during an outage
// it names the outage's last error too.
func (o *outage) interrupted(ctx context.Context, err error) error {
	if o.last == nil {
		return err
	}
	return fmt.Errorf("%w while retrying (last error: %w)", ctx.Err(), o.last)
}

// answered records that the server answered: the outage, if any, is over.
func (o *outage) answered() {
	if o.since.IsZero() {
		return
	}
	o.since, o.last = time.Time{}, nil
	if o.policy.Recovered != nil {
		o.policy.Recovered()
	}
}

// jitter draws a wait from [d/2, d).
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2)
}

// transient reports whether an attempt that failed with err may succeed if
// made again: always if the connection could not be made or a braid server
// refused the call while it stops (503 with code unavailable: it did
// nothing), and for a repeatable call also if the connection broke or a
// proxy said the server is away.
func transient(err error, repeatable bool) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if notConnected(err) {
		return true
	}
	var ue *unavailableError
	if errors.As(err, &ue) && ue.stopping() {
		return true
	}
	if !repeatable {
		return false
	}
	return errors.As(err, &ue) || brokenConnection(err)
}

// notConnected reports whether err is a failure to connect, after which
// nothing of the request was sent. A host name that does not resolve is not
// a passing failure.
func notConnected(err error) bool {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		return false
	}
	var dns *net.DNSError
	return !errors.As(err, &dns) || !dns.IsNotFound
}

// brokenConnection reports whether err says the connection ended before
// the whole answer arrived.
func brokenConnection(err error) bool {
	for _, target := range []error{io.EOF, io.ErrUnexpectedEOF, net.ErrClosed,
		syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ECONNABORTED, syscall.EPIPE} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// unavailableError is an answer of 502, 503 or 504: the server, or a proxy
// in front of it, is there but cannot serve the call now. It unwraps to the
// *api.Error the body held.
type unavailableError struct {
	err    error
	status int
}

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// stopping reports whether a braid server itself refused the call because
// it is stopping (503, code unavailable), which it does before acting.
func (e *unavailableError) stopping() bool {
	var ae *api.Error
	return e.status == http.StatusServiceUnavailable && errors.As(e.err, &ae) && ae.Code == api.CodeUnavailable
}

// isUnavailable reports whether an HTTP status says the server is away.
func isUnavailable(status int) bool {
	return status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout
}
