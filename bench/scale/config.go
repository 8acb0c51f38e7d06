package scale

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/braidhq/braid/transport"
)

// Config describes a run. Zero values mean the defaults given.
type Config struct {
	// Exe is the braid binary the server runs as. Required.
	Exe string
	// Workers simulated (default 10,000), each with Threads threads
	// (default 1).
	Workers, Threads int
	// Units of the one repeat job (default 1,000,000), each of UnitBytes
	// bytes of input (default 1 KiB; 0 is taken as the default, use
	// EmptyUnits for none).
	Units, UnitBytes int
	// EmptyUnits sends units without input.
	EmptyUnits bool
	// Compute is the modelled compute time of a unit on a worker thread
	// (default 0: answered at once).
	Compute time.Duration
	// Transport is the data plane's (default tcpn).
	Transport string
	// Liveness is the associations' liveness bound, offered by the server
	// and the workers alike (default: the transport's, 3 s). Each idle
	// association is pinged every half of it both ways: with 10,000
	// workers at 3 s that is about 13,300 pings a second.
	Liveness time.Duration
	// Restart kills the server with SIGKILL once this fraction of the job's
	// units is done (0: never) and starts it again on the same data.
	Restart float64
	// ServerNice is the server process's nice value (priority.go): 0
	// runs it as this process, below zero gives it the CPU before the
	// simulated fleet (which needs the privilege to raise a priority;
	// without it the server runs at 0 and the run says so).
	// Zero values do not mean a default here: callers pass
	// DefaultServerNice for it.
	ServerNice int
	// ServerArgs are added to the server's command line.
	ServerArgs []string
	// DataDir is the server's data directory (default: a temporary one,
	// removed at the end).
	DataDir string
	// PollEvery is the pause between polls of each list API while the job
	// runs (default 100 ms); PageSize the page asked for (default 100).
	PollEvery time.Duration
	PageSize  int
	// Timeout bounds the run once the workers are up (default 30 minutes).
	Timeout time.Duration
	// Log gets progress lines (default: discarded).
	Log io.Writer
	// CPUProfile, if set, is where the bench writes CPU profiles taken
	// while the job runs (profile.go): this process's (the simulated
	// fleet's) to CPUProfile, the server's to CPUProfile.server.
	CPUProfile string
}

func (c *Config) defaults() {
	setDefault(&c.Workers, 10_000)
	setDefault(&c.Threads, 1)
	setDefault(&c.Units, 1_000_000)
	setDefault(&c.UnitBytes, 1<<10)
	if c.EmptyUnits {
		c.UnitBytes = 0
	}
	if c.Transport == "" {
		c.Transport = "tcpn"
	}
	if c.PollEvery <= 0 {
		c.PollEvery = 100 * time.Millisecond
	}
	setDefault(&c.PageSize, 100)
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Minute
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

func setDefault(v *int, def int) {
	if *v <= 0 {
		*v = def
	}
}

func (c *Config) validate() error {
	switch {
	case c.Exe == "":
		return errors.New("scale: no braid binary to run the server")
	case c.Threads > transport.MaxStreams:
		return fmt.Errorf("scale: %d threads per worker: at most %d", c.Threads, transport.MaxStreams)
	case c.Restart < 0 || c.Restart >= 1:
		return fmt.Errorf("scale: restart at %v of the job: want a fraction in (0, 1), or 0 for none", c.Restart)
	case c.ServerNice < -20 || c.ServerNice > 19:
		return fmt.Errorf("scale: server nice %d: want -20 to 19", c.ServerNice)
	case c.Compute < 0:
		return errors.New("scale: negative compute time")
	}
	return nil
}
