package scheduler

import (
	"fmt"
	"slices"
	"strings"
)

// Progress reports the core's view of job; false if the job is unknown.
// Done counts successful units; Done+Failed+Running+Pending == Total. It
// costs O(1) but for Waiting, which is recomputed (in O(operations)) only
// after a worker came up or went down or the set of the job's operations
// with pending units changed.
func (c *Core) Progress(job string) (JobProgress, bool) {
	j := c.jobs[job]
	if j == nil {
		return JobProgress{}, false
	}
	p := JobProgress{Total: j.n, Failed: j.failed, Done: j.final - j.failed, Pending: j.pending}
	p.Running = p.Total - j.final - j.pending
	if j.active() && j.pending > 0 {
		if j.waitGen != c.gen || j.waitOps != j.opsGen {
			j.waiting, j.waitGen, j.waitOps = c.waiting(j), c.gen, j.opsGen
		}
		p.Waiting = j.waiting
	}
	return p, true
}

// waiting names the operations of j's pending units no up worker can run.
func (c *Core) waiting(j *job) string {
	var ops []string
	for _, q := range j.ops {
		if q.pending > 0 && len(q.x.members) == 0 {
			ops = append(ops, q.op)
		}
	}
	slices.Sort(ops)
	switch len(ops) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("no registered worker can run operation %q", ops[0])
	}
	q := make([]string, len(ops))
	for i, op := range ops {
		q[i] = fmt.Sprintf("%q", op)
	}
	return "no registered worker can run operations " + strings.Join(q, ", ")
}

// Workers returns a snapshot of every worker the core has seen, by name.
func (c *Core) Workers() []WorkerStatus {
	if !c.sorted {
		slices.Sort(c.names)
		c.sorted = true
	}
	out := make([]WorkerStatus, len(c.names))
	for i, n := range c.names {
		out[i] = c.workers[n].status()
	}
	return out
}

// Worker returns a snapshot of one worker; false if the core never saw it.
func (c *Core) Worker(name string) (WorkerStatus, bool) {
	w := c.workers[name]
	if w == nil {
		return WorkerStatus{}, false
	}
	return w.status(), true
}

// Jobs lists the jobs the core holds, in arrival order.
func (c *Core) Jobs() []string {
	out := make([]string, len(c.all))
	for i, j := range c.all {
		out[i] = j.name
	}
	return out
}

// Forget drops a finished or cancelled job with no copy still in flight,
// so a long-lived core does not grow without bound; results that arrive
// for it later are Dropped. It reports whether the job was forgotten.
func (c *Core) Forget(name string) bool {
	j := c.jobs[name]
	if j == nil || j.active() || j.copies > 0 {
		return false
	}
	delete(c.jobs, name)
	c.all = slices.DeleteFunc(c.all, func(o *job) bool { return o == j })
	return true
}
