package worker

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
)

// registerLoop registers with one server, then heartbeats; it registers
// again whenever the server forgets the worker (a server restart), and
// backs off while the server is unreachable, to at most one heartbeat
// interval, so that it is back within about a second of a restart. While
// registered it sends the worker's figures again when reannounce asks. It
// returns a *RejectedError if the server refuses the worker for good (a
// wrong secret, invalid figures, a URL that is not a braid server's, the
// name in use by a live worker), nil when ctx ends. On exit it
// deregisters.
//
// While the worker has an association with the server and the server
// said it takes that for the worker's sign of life (api.Beat's
// LinkedHeartbeatMS), it beats at the linked interval; when the
// association ends it beats at once, and at the interval from then on.
func (w *Worker) registerLoop(ctx context.Context, base string) *RejectedError {
	c := client.New(base).WithHTTPClient(w.cfg.HTTPClient).WithSecret(w.cfg.Secret).WithRetry(client.Retry{For: -1})
	interval, backoff := time.Second, 250*time.Millisecond
	var linked time.Duration // the server's linked interval; 0: none
	var serverID string      // the id its associations name
	registered, announce := false, false
	nameTries := 0 // registrations refused since the last that succeeded: name in use
	var out outage
	for ctx.Err() == nil {
		var err error
		switch {
		case !registered:
			var reg api.Registration
			if reg, err = c.RegisterWorker(ctx, w.Info()); err == nil {
				registered, announce, backoff, nameTries = true, false, 250*time.Millisecond, 0
				linked, serverID = 0, reg.ServerID
				if reg.HeartbeatMS > 0 {
					interval = time.Duration(reg.HeartbeatMS) * time.Millisecond
				}
				w.log.Info("registered", "server", c.URL())
			}
		case announce:
			if err = c.UpdateWorker(ctx, w.Info()); err == nil {
				announce = false
				linked = 0 // it re-registered: the server judges it by the interval until a heartbeat says otherwise
				w.log.Info("figures re-announced", "server", c.URL())
			}
		default:
			var beat api.Beat
			if beat, err = c.Beat(ctx, w.cfg.Name, w.epoch); err == nil && beat.HeartbeatMS > 0 {
				interval = time.Duration(beat.HeartbeatMS) * time.Millisecond // a server of many workers asks for fewer
				linked = time.Duration(beat.LinkedHeartbeatMS) * time.Millisecond
			}
		}
		if registered && isNotFound(err) { // a heartbeat or update: the registration is gone
			registered = false
			w.log.Info("server forgot this worker; registering again", "server", c.URL())
			continue
		}
		if !registered && isConflict(err) && nameTries < nameRetries {
			nameTries++
			w.log.Info("name in use; asking again in case the holder is this worker's predecessor, killed with a heartbeat in flight",
				"server", c.URL(), "in", 2*interval, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(2 * interval):
			}
			continue
		}
		if client.Rejected(err) { // the server holds no registration of ours to remove
			return &RejectedError{Server: c.URL(), Err: err}
		}
		wait := interval
		var ended <-chan struct{} // the association the wait relies on (nil: none)
		if err == nil && registered && !announce && linked > 0 {
			if ended = w.linkTo(serverID); ended != nil {
				wait = linked
			}
		}
		if err != nil && ctx.Err() == nil {
			out.failed(w.log, c.URL(), err)
			wait, backoff = min(backoff, interval), min(2*backoff, interval)
		} else if err == nil {
			out.answered(w.log, c.URL())
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		case <-ended: // no longer linked: a heartbeat at once
			linked = 0
		case <-w.announce[base]:
			announce = registered // a registration to come sends the new figures anyway
		}
	}
	if registered {
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		switch err := c.DeregisterWorker(dctx, w.cfg.Name, w.epoch); {
		case serverGone(err):
			w.log.Info("not deregistered: the server is stopping too", "server", c.URL(), "err", err)
		case err != nil:
			w.log.Warn("deregistering", "server", c.URL(), "err", err)
		default:
			w.log.Info("deregistered", "server", c.URL())
		}
	}
	return nil
}

// nameRetries is how many times a registration refused because the name
// is in use (409 conflict) is made again, two heartbeat intervals apart,
// before the worker takes the refusal as final. A process killed with -9
// may have had a heartbeat in flight that the server handles after the
// registration of the process started in its place arrived: that
// heartbeat looks like a live holder. The registration made again finds
// the holder silent and takes the name (docs/leases.md, "Worker names").
const nameRetries = 2

// serverGone reports whether err says the server is stopping or stopped
// (it refused the call as it stops, closed the connection, or is not
// there): a worker need not deregister from it, since it sees the worker's
// heartbeats end either way (a whole cluster shut down at once).
func serverGone(err error) bool {
	var ns *client.NoServerError
	var ae *api.Error
	return errors.As(err, &ns) || errors.As(err, &ae) && ae.Code == api.CodeUnavailable ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

func isConflict(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == api.CodeConflict
}

func isNotFound(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == api.CodeNotFound
}

// outage keeps one server's spells of failed calls to a few log lines:
// the first failure, then one every outageLogEvery while it lasts, and its
// end. A call that got no answer (no connection, or one that broke) says
// the server is unreachable; an answer that is an error (a 500, a 503
// while the server stops, a proxy's 502) says the server erred.
type outage struct {
	since, logged time.Time
	erred         bool // the spell's last failure was an error answer, not a connection failure
}

const outageLogEvery = 30 * time.Second

func (o *outage) failed(log *slog.Logger, server string, err error) {
	now, erred := time.Now(), !connectionFailed(err)
	what := "server unreachable"
	if erred {
		what = "server error"
	}
	switch {
	case o.since.IsZero() || erred != o.erred:
		if o.since.IsZero() {
			o.since = now
		}
		o.logged, o.erred = now, erred
		log.Warn(what+"; retrying", "server", server, "err", err)
	case now.Sub(o.logged) >= outageLogEvery:
		o.logged = now
		still := "server still unreachable; retrying"
		if erred {
			still = "server still answers with errors; retrying"
		}
		log.Warn(still, "server", server, "for", now.Sub(o.since).Round(time.Second), "err", err)
	default:
		log.Debug(what, "server", server, "err", err)
	}
}

func (o *outage) answered(log *slog.Logger, server string) {
	if o.since.IsZero() {
		return
	}
	what := "server reachable again"
	if o.erred {
		what = "server answers again"
	}
	log.Info(what, "server", server, "after", time.Since(o.since).Round(time.Millisecond))
	*o = outage{}
}

// connectionFailed reports whether err is a call that got no answer: the
// connection could not be made or broke (the HTTP client's *url.Error),
// rather than an answer from the server that is an error.
func connectionFailed(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue)
}

// ErrRejected is what Run's error wraps when every server refused the
// worker for good.
var ErrRejected = errors.New("worker: rejected by server")

// RejectedError is a server's refusal of the worker that trying again
// cannot change. It matches ErrRejected and unwraps to the server's
// *api.Error.
type RejectedError struct {
	Server string // the server's base URL
	Err    error
}

func (e *RejectedError) Error() string { return "rejected by server " + e.Server + ": " + e.Reason() }

// Reason says why the server refused the worker, and what to do.
func (e *RejectedError) Reason() string { return rejection(e.Err) }

func (e *RejectedError) Unwrap() []error { return []error{ErrRejected, e.Err} }

// rejection says why a server refused the worker, and what to do.
func rejection(err error) string {
	var wu *client.WrongURLError
	if errors.As(err, &wu) {
		return wu.Error()
	}
	var nb *client.NotBraidError
	if errors.As(err, &nb) {
		what := nb.Status // "200 OK with text/html, not JSON"
		if nb.StatusCode/100 != 2 {
			what += ", not a braid error"
		}
		return "not a braid server: it answered " + what + "; give the server's base URL, such as http://HOST:7070"
	}
	var ae *api.Error
	if !errors.As(err, &ae) {
		return err.Error()
	}
	msg := ae.Message
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	switch ae.Code {
	case api.CodeUnauthorized:
		return "wrong cluster secret: start the worker with the server's secret (--secret-file or $BRAID_SECRET)"
	case api.CodeNotFound:
		return "no braid worker registry at this URL (" + msg + "); give the server's base URL, such as http://HOST:7070"
	}
	return msg
}

// reannounce has the worker's current figures sent to every server whose
// register loop still runs: not to one that refused the worker for good
// (a wrong secret, or a name another process has taken since).
func (w *Worker) reannounce() {
	for _, ch := range w.announce {
		select {
		case ch <- struct{}{}:
		default: // already asked
		}
	}
}

func (w *Worker) infoHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/info", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(w.Info())
	})
	return mux
}
