package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/braidhq/braid/api"
)

// A worker's name belongs to one process at a time, told apart by its
// epoch (api.WorkerInfo.Epoch, new for each start of a worker process).
//
// A registration under a name that another process holds takes the name
// only if that process is gone. The server knows it is gone when its
// heartbeats timed out (the worker is down), or when it has been silent
// for claimWait already. Otherwise the registration waits up to claimWait
// for a sign of life from the holder: a heartbeat naming the holder's
// epoch. One comes within a heartbeat interval from a live holder, and
// the registration is refused (409 conflict, naming the holder); none
// comes from a dead one, and the newcomer takes the name (its units go
// back to the queue, as for any worker that went away). So a worker killed
// and started again at once with the same name is back within two
// heartbeat intervals, while a second process started by mistake under a
// live worker's name is refused. (A heartbeat the killed process had in
// flight, handled after the registration arrived, looks like a live
// holder; the worker asks again after a refusal of its registration, and
// is then let in: docs/leases.md, "Worker names".)
//
// A holder that was only frozen past claimWait (SIGSTOP, a stalled VM)
// and then comes back finds its name taken: its heartbeats, which carry
// its epoch, are refused with a conflict, and it stops.

// otherProcess reports whether a registration from epoch comes from
// another process than the one w registered. A zero epoch (a worker that
// does not say) is taken for the same process, as before epochs.
func (w *workerConn) otherProcess(epoch uint64) bool {
	return w.info.Epoch != 0 && epoch != 0 && epoch != w.info.Epoch
}

// seen records a sign of life from the worker's process (a heartbeat, its
// registration) that the loop handles, waking the registrations waiting
// to take its name.
func (w *workerConn) seen(now time.Time) {
	w.live.seen(now)
	close(w.beat)
	w.beat = make(chan struct{})
}

// claim registers info unless another process holds its name and may be
// alive (on the loop). asked is when the registration arrived. When it
// must wait to know, it returns what to wait for (a *holderWait); the
// caller waits and calls again with it, until claim registers info or
// refuses it with a *nameInUseError.
//
// A holder that beats at the interval is judged by its heartbeats: it is
// alive if it beat since asked, within two of its intervals. A linked
// holder (roster), which beats rarely, is judged by its association: the
// loop sends it a want, which a live worker's transport answers; an
// association still up when the wait (at least twice its sent bound) is
// over heard from the holder after the want arrived, so the holder is
// alive. If the association ends meanwhile, the holder is judged by its
// heartbeats from then on: a live one beats at once, so the registration
// waits two of its intervals from then for that heartbeat, whenever the
// association last heard from it.
func (d *dispatcher) claim(info api.WorkerInfo, asked time.Time, waited *holderWait) (*holderWait, error) {
	h := d.workers[info.Name]
	if h == nil || !h.otherProcess(info.Epoch) || h.state == api.WorkerDown {
		d.register(info)
		return nil, nil
	}
	if h.assoc != nil && h.assoc.Err() != nil { // ended: its last sign of life there counts before we judge
		d.workerDown(h, h.assoc.Err())
	}
	// A heartbeat since asked proves it alive, and so does the association
	// it was probed on, still up; the association's end does not.
	beat := h.live.lastBeat().After(asked)
	answered := waited != nil && waited.probed && h.gen == waited.gen && h.assoc != nil && h.answers(h.assoc) == nil
	switch {
	case beat || answered:
		return nil, &nameInUseError{name: info.Name, holder: h.info, lastBeat: h.live.lastBeat(), answered: !beat}
	case waited == nil && d.roster.linked(h.live) && h.answers(h.assoc) == nil:
		h.live.slow.Store(true) // a heartbeat wakes the registration too
		d.sendWant(h, true)     // the probe
		return &holderWait{beat: h.beat, ended: h.assoc.Done(), wait: max(d.roster.claimWait(h.live), 2*time.Duration(h.live.sent.Load())),
			probed: true, gen: h.gen}, nil
	case waited != nil && waited.probed:
		// The association ended under the probe. A live holder that learns
		// of it (our end's abort closes its end, where the network carries
		// that) heartbeats at once: wait for that from now. Its last word
		// there (lastSeen) may be an idle ping from long before the
		// registration, and says nothing of whether it is alive now.
		h.live.slow.Store(true)
		return &holderWait{beat: h.beat, wait: d.roster.claimWait(h.live)}, nil
	case waited == nil && asked.Sub(h.live.lastSeen()) < d.roster.claimWait(h.live):
		h.live.slow.Store(true) // its next heartbeat must wake the registration
		return &holderWait{beat: h.beat, wait: d.roster.claimWait(h.live)}, nil
	}
	d.log.Info("worker name taken by a new process; the old one is gone", "worker", info.Name,
		"old_epoch", h.info.Epoch, "new_epoch", info.Epoch, "old_silent_for", time.Since(h.live.lastSeen()).Round(time.Millisecond))
	d.register(info)
	return nil, nil
}

// holderWait is what a registration waits for before claim judges the
// holder of its name again: a sign of life the loop sees (beat), the end
// of the holder's association (ended, when it was probed on it), or wait.
type holderWait struct {
	beat, ended <-chan struct{}
	wait        time.Duration
	probed      bool // the holder is linked and was probed on its association gen
	gen         int
}

// nameInUseError refuses a registration: a live process holds the name.
type nameInUseError struct {
	name     string
	holder   api.WorkerInfo
	lastBeat time.Time // the holder's last heartbeat
	// answered: the holder proved alive over its association (it is
	// linked, and heartbeats rarely), not by a heartbeat.
	answered bool
}

func (e *nameInUseError) Error() string {
	sign := "last heartbeat " + e.lastBeat.UTC().Format("15:04:05.000Z")
	if e.answered {
		sign = "linked: its data-plane association with this server is up and answered just now"
	}
	return fmt.Sprintf("name %s is in use by a live worker at %s, %s (pick another --name)",
		e.name, endpoints(e.holder.Endpoints), sign)
}

func (e *nameInUseError) Unwrap() error { return errConflict }

// endpoints formats a worker's endpoints for people: "tcp 10.0.0.5:7000".
func endpoints(eps []api.Endpoint) string {
	s := make([]string, len(eps))
	for i, ep := range eps {
		s[i] = ep.Transport + " " + ep.Addr
	}
	return strings.Join(s, ", ")
}
