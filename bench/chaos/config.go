package chaos

import (
	"errors"
	"io"
	"sync"
	"time"
)

// Config describes one chaos run. Zero values mean the documented defaults.
type Config struct {
	// Exe is the braid binary to run the server and the workers with.
	// Required.
	Exe string
	// Transport is the workers' data-plane transport (default "sctp").
	Transport string
	// Duration is how long faults are injected (default 1 minute).
	Duration time.Duration
	// Seed draws the fault schedule (Plan).
	Seed uint64
	// From skips the schedule's faults before From and moves the rest
	// earlier by From less 2 s, so that one stretch of a long schedule can
	// be replayed on its own (run with Duration the stretch's end).
	From time.Duration
	// Workers and Threads size the cluster (default 3 workers × 2 threads).
	Workers, Threads int
	// Liveness is the dead-peer bound given to the server and the workers
	// (default 3 s, the transports' own default).
	Liveness time.Duration
	// Units is the size of each repeat job (default 200).
	Units int
	// Recovery bounds how long the jobs may take to finish once the faults
	// have stopped (default 2 minutes).
	Recovery time.Duration
	// Dir holds the server's data directory and the processes' logs
	// (default: a new temporary directory, removed at the end unless the
	// run failed).
	Dir string
	// Log receives a line per fault, detection and recovery (default:
	// discarded).
	Log io.Writer
}

func (c *Config) validate() error {
	if c.Exe == "" {
		return errors.New("chaos: no braid binary")
	}
	if c.Transport == "" {
		c.Transport = "sctp"
	}
	setDefault(&c.Duration, time.Minute)
	setDefault(&c.Liveness, 3*time.Second)
	setDefault(&c.Recovery, 2*time.Minute)
	setDefault(&c.Workers, 3)
	setDefault(&c.Threads, 2)
	setDefault(&c.Units, 200)
	if c.Log == nil {
		c.Log = io.Discard
	}
	c.Log = &lockedWriter{w: c.Log}
	return nil
}

// lockedWriter serialises the writes of concurrent faults.
type lockedWriter struct {
	mu sync.Mutex // guards w
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func setDefault[T int | time.Duration](p *T, def T) {
	if *p <= 0 {
		*p = def
	}
}
