package paper

import (
	"errors"
	"fmt"
	"github.com/braidhq/braid/internal/cpucg"
	"io"
	"os"
	"runtime"
	"time"
)

// PaperUnits are the numbers of units of the paper's figures.
var PaperUnits = []int{1, 5, 10, 20, 50, 100, 200, 500}

// QuickUnits are the numbers of units of a --quick smoke run.
var QuickUnits = []int{1, 5, 20}

// Config describes one run. Zero values mean the documented defaults.
type Config struct {
	// Exe and ExeArgs start a worker process as Exe ExeArgs... --server URL
	// --threads N --transport T --name NAME --secret-file F (default: this
	// executable and ["worker"]).
	Exe     string
	ExeArgs []string
	// Env is appended to the worker processes' environment.
	Env []string
	// Out is the output directory (default bench-out/paper).
	Out string
	// Units are the numbers of units per job (default PaperUnits, or
	// QuickUnits with Quick).
	Units []int
	// Runs is the number of runs per line and number of units (default 5,
	// or 1 with Quick).
	Runs int
	// Quick is a smoke run of the plumbing: few units, one run, no warm-up.
	Quick bool
	// SlowCPUs is the slow worker's speed in cores of a normal worker
	// (default 0.65: the paper's C3 had one core doing about 0.65 of a C1
	// core's work). Its CPU quota is SlowCPUs × MachineCPUs / 2, a normal
	// machine having 2 cores, or SlowCPUs CPUs when normal workers are
	// uncapped.
	SlowCPUs float64
	// MachineCPUs is the CPU quota, in CPUs, of each normal worker in the
	// slow-worker figures (12–16). It makes each worker a machine of its
	// own, as in the paper: uncapped, the workers share this machine's
	// cores, and the slow worker would take CPU from the normal ones
	// instead of adding its own. 0 means min(2, 0.375 × Cores), which is
	// 0.75 on 2 cores and leaves room for the server; negative leaves
	// normal workers uncapped.
	MachineCPUs float64
	// NoSlow skips the slow-worker figures (set when cgroups are missing).
	NoSlow bool
	// Figures restricts the run to these figure ids, e.g. "fig4" (default
	// all).
	Figures []string
	// PeerResults is a results file of bench/peers/dask_blur.py to draw on
	// figures 8 and 9.
	PeerResults string
	// JobTimeout bounds one job (default 3 minutes); Timeout bounds the
	// whole run (default 45 minutes).
	JobTimeout, Timeout time.Duration
	// Cores is the number of cores the workers can use, for the compute
	// floor (default runtime.NumCPU()).
	Cores int
	// Command is the exact command line, quoted in the report.
	Command string
	// Log receives progress lines (default: discard).
	Log io.Writer
}

func (c *Config) validate() error {
	if c.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("paper: find the braid executable: %w", err)
		}
		c.Exe, c.ExeArgs = exe, []string{"worker"}
	}
	if c.Out == "" {
		c.Out = "bench-out/paper"
	}
	c.setCounts()
	if c.Cores == 0 {
		c.Cores = runtime.NumCPU()
	}
	if c.SlowCPUs == 0 {
		c.SlowCPUs = 0.65
	}
	if c.MachineCPUs == 0 {
		c.MachineCPUs = min(2, 0.375*float64(c.Cores))
	}
	if c.JobTimeout == 0 {
		c.JobTimeout = 3 * time.Minute
	}
	if c.Timeout == 0 {
		c.Timeout = 45 * time.Minute
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Runs < 1 {
		return errors.New("paper: --runs must be at least 1")
	}
	if q := c.SlowQuota(); q < cpucg.MinQuota || c.SlowCPUs > 2 {
		return fmt.Errorf("paper: --slow-cpus %.2f gives the slow worker %.3f CPU; it must be at most 2 cores "+
			"and give at least %.2f CPU", c.SlowCPUs, q, cpucg.MinQuota)
	}
	if c.MachineCPUs > 0 && (c.MachineCPUs < cpucg.MinQuota || c.MachineCPUs > float64(c.Cores)) {
		return fmt.Errorf("paper: --machine-cpus %.2f: want between %.2f and the %d cores, or negative for "+
			"uncapped workers", c.MachineCPUs, cpucg.MinQuota, c.Cores)
	}
	return nil
}

// SlowQuota is the slow worker's CPU quota in CPUs.
func (c *Config) SlowQuota() float64 {
	if c.MachineCPUs > 0 {
		return c.SlowCPUs * c.MachineCPUs / 2
	}
	return c.SlowCPUs
}

func (c *Config) setCounts() {
	if len(c.Units) == 0 {
		c.Units = PaperUnits
		if c.Quick {
			c.Units = QuickUnits
		}
	}
	if c.Runs == 0 {
		c.Runs = 5
		if c.Quick {
			c.Runs = 1
		}
	}
}
