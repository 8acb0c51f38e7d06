package netgrid

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/bench/netcluster"
	"github.com/braidhq/braid/bench/overhead"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/benchout"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/netem"
	"github.com/braidhq/braid/transport/sctp"
)

// Config is a grid to measure: every setting at every condition, a job of
// each unit size (or more, as Job says).
type Config struct {
	Conditions []Condition
	Sizes      []int // bytes of input (and output) per unit
	Settings   []Setting
	// Rate is the link's rate each way, as netem reads it (e.g. "100M").
	Rate string
	// Job sizes and bounds each job, and says how many run per point.
	Job Job
	// Options tune the transports; a setting's count replaces theirs.
	Options transports.Options
	// Exe is the braid binary the server and the workers run (package
	// netcluster). Required.
	Exe string
	// Out is the output directory, rewritten after each condition
	// (Write); Command and Floor are recorded there.
	Out     string
	Command string
	Floor   float64
	// HostCC is the machine's TCP congestion control, which the TCP
	// settings without @CC run under and the others' beds have (default:
	// MachineCC).
	HostCC string
	// BedWait is how long to wait for the bed when another process holds
	// it (each condition brings it up once per congestion control).
	BedWait time.Duration
	// Log gets a line per job and what the bed does (default: discarded).
	Log io.Writer
}

// Job is how each job of the grid is sized and bounded, and how many run
// at each point.
type Job struct {
	// Workers and their Threads size each cluster.
	Workers, Threads int
	// Bytes of input per job: units = Bytes ÷ size, within [MinUnits,
	// MaxUnits].
	Bytes, MinUnits, MaxUnits int
	// Budget bounds a job: one still running then is cancelled and rated
	// by the units it finished.
	Budget time.Duration
	// Runs jobs per point and setting; then more until their makespans
	// add up to MinTime (0: none), at most MaxRuns.
	Runs, MaxRuns int
	MinTime       time.Duration
}

// more reports whether a setting runs another job at a point where it ran
// r whose makespans (a cut job's budget) add up to spent: until runs, then
// until minTime or maxRuns.
func (j Job) more(r int, spent time.Duration) bool {
	return r < j.Runs || (spent < j.MinTime && r < j.MaxRuns)
}

// Run measures the grid, one condition at a time, each in a bed per
// congestion control of the hosts (bedGroups), and returns what it
// measured; Out holds it after each bed and after a failure.
func Run(ctx context.Context, cfg Config) (Record, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	own := cfg.HostCC
	if own == "" {
		var err error
		if own, err = MachineCC(); err != nil {
			return Record{}, err
		}
	}
	run := Record{Command: cfg.Command, Started: time.Now(), Default: Default.String(), Floor: cfg.Floor, HostCC: own}
	settings := make([]Setting, len(cfg.Settings))
	for i, s := range cfg.Settings {
		settings[i] = s.resolved(own)
		run.Settings = append(run.Settings, settings[i].String())
	}
	for _, c := range cfg.Conditions {
		for _, g := range bedGroups(settings, own) {
			rs, err := measureBed(ctx, cfg, c, g)
			run.Results = append(run.Results, rs...)
			if err != nil {
				if werr := Write(cfg.Out, run); werr != nil { // keep what was measured
					fmt.Fprintf(cfg.Log, "net: %v\n", werr)
				}
				return run, err
			}
			if err := Write(cfg.Out, run); err != nil {
				return run, err
			}
		}
	}
	return run, nil
}

// bedGroup is the settings that run in one bed: the hosts' congestion
// control, whether the settings are TCP's, and the settings in the grid's
// order.
type bedGroup struct {
	cc       string
	tcp      bool
	settings []Setting
}

// bedGroups splits settings by the hosts' congestion control they run
// under (Setting.bedCC), the TCP settings apart from the others even
// where that is the same (own, the machine's), so that no bed is held
// for much more than a few minutes: others take turns with it between
// beds. Groups come in the order each first appears.
func bedGroups(settings []Setting, own string) []bedGroup {
	var out []bedGroup
	for _, s := range settings {
		cc, tcp := s.bedCC(own), s.hostsCC()
		i := slices.IndexFunc(out, func(g bedGroup) bool { return g.cc == cc && g.tcp == tcp })
		if i < 0 {
			out = append(out, bedGroup{cc: cc, tcp: tcp})
			i = len(out) - 1
		}
		out[i].settings = append(out[i].settings, s)
	}
	return out
}

// measureBed brings up the bed of condition c with group g's congestion
// control, measures g's settings there and takes the bed down.
func measureBed(ctx context.Context, cfg Config, c Condition, g bedGroup) ([]Result, error) {
	spec, err := netem.Parse(c.Spec(cfg.Rate, g.cc))
	if err != nil {
		return nil, fmt.Errorf("netgrid: %s: %w", c, err)
	}
	asked := time.Now()
	nc, err := netcluster.NewWaiting(spec, cfg.Exe, cfg.BedWait, cfg.Log)
	if err != nil {
		return nil, err
	}
	if d := time.Since(asked); d > time.Second {
		fmt.Fprintf(cfg.Log, "net: the bed (cc=%s) was up after %s (another process held it)\n", g.cc, d.Round(time.Second))
	}
	defer nc.Close()
	var out []Result
	for _, s := range g.settings {
		rs, err := measureSetting(ctx, cfg, nc, c, s)
		for i := range rs {
			rs[i].HostCC = g.cc
		}
		out = append(out, rs...)
		if err != nil {
			return out, fmt.Errorf("%s, %s: %w", c, s, err)
		}
	}
	return out, nil
}

// MachineCC is this machine's TCP congestion control (the root
// namespace's net.ipv4.tcp_congestion_control).
func MachineCC() (string, error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		return "", fmt.Errorf("netgrid: the machine's TCP congestion control: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// measureSetting runs setting s's jobs at condition c, one cluster for all
// the unit sizes unless a job is cut (its units may still be on the
// wire, so the next job gets a fresh cluster).
func measureSetting(ctx context.Context, cfg Config, nc *netcluster.Cluster, c Condition, s Setting) ([]Result, error) {
	topts, j := cfg.Options, cfg.Job
	switch s.Transport {
	case "sctp":
		topts.SCTPFlows = s.Count // over --sctp-flows and --sctp-cc: the setting says
		topts.SCTPCC = s.CC
		if s.CC == "" {
			topts.SCTPCC = sctp.CCAuto // with a count: reno
		}
	case "ptcp":
		if s.Count > 0 {
			topts.PTCP.RecStripes = s.Count
		}
	}
	var out []Result
	var cl *client.Client
	stop := func() {}
	defer func() { stop() }()
	for _, size := range cfg.Sizes {
		units := min(max(j.Bytes/size, j.MinUnits), j.MaxUnits)
		var spent time.Duration
		for r := 0; j.more(r, spent); r++ {
			if cl == nil {
				fresh, st, err := startCluster(ctx, cfg.Log, nc, s.Transport, topts, j)
				if err != nil {
					return out, err
				}
				cl, stop = fresh, st
			}
			res, err := measureJob(ctx, cl, units, size, j.Budget)
			if err != nil {
				return out, err
			}
			res.RTTMS, res.LossPct, res.Setting, res.Run = float64(c.RTT)/float64(time.Millisecond), c.Loss, s.String(), r
			out = append(out, res)
			spent += time.Duration(res.Seconds * float64(time.Second))
			cut := ""
			if res.Cut {
				cut = fmt.Sprintf(" (cut at %s: %d of %d units)", j.Budget, res.Done, res.Units)
				stop()
				cl, stop = nil, func() {}
			}
			fmt.Fprintf(cfg.Log, "net: %s, %s units, %s: %s units/s, p99 %.0f ms%s\n",
				c, SizeLabel(size), s, benchout.UnitRate(res.UnitsPerSec), res.P99MS, cut)
		}
	}
	return out, nil
}

// startCluster starts a cluster for the grid, trying twice: a cluster
// started just after a cut job's was stopped has failed to come up once.
func startCluster(ctx context.Context, log io.Writer, nc *netcluster.Cluster, tname string, topts transports.Options, j Job) (*client.Client, func(), error) {
	cl, stop, err := nc.Start(ctx, tname, topts, j.Workers, j.Threads, 0)
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(log, "net: the %s cluster did not start (%v); once more\n", tname, err)
		cl, stop, err = nc.Start(ctx, tname, topts, j.Workers, j.Threads, 0)
	}
	return cl, stop, err
}

// measureJob runs one noop job of units repeats of a random object of
// size bytes, cancelling it at the budget.
func measureJob(ctx context.Context, cl *client.Client, units, size int, budget time.Duration) (Result, error) {
	res := Result{Units: units, Size: size}
	spec, err := overhead.Spec(ctx, cl, overhead.Op{Name: "noop"}, units, size, io.Discard)
	if err != nil {
		return res, err
	}
	j, err := cl.Submit(ctx, spec)
	if err != nil {
		return res, err
	}
	wctx, cancel := context.WithTimeout(ctx, budget)
	_, err = cl.Wait(wctx, j.ID, nil)
	cancel()
	switch {
	case err != nil && ctx.Err() == nil && wctx.Err() != nil:
		res.Cut = true
		res.Seconds = budget.Seconds()
		if _, err := cl.Cancel(ctx, j.ID); err != nil {
			return res, fmt.Errorf("cancel job %s at the budget: %w", j.ID, err)
		}
	case err != nil:
		return res, err
	}
	if j, err = cl.Job(ctx, j.ID, true); err != nil {
		return res, err
	}
	if !res.Cut {
		if j.State != api.JobDone {
			return res, fmt.Errorf("job %s: %s %s", j.ID, j.State, j.Error)
		}
		res.Seconds = j.MakespanMS / 1000
	}
	var lat []float64
	deadline := j.ReceivedAt.Add(budget) // a cut job counts the units done within its budget
	for _, u := range j.Units {          // a unit's states are named as a job's
		if u.State == api.JobDone && u.Sent != nil && u.Returned != nil && (!res.Cut || !u.Returned.After(deadline)) {
			lat = append(lat, float64(u.Returned.Sub(*u.Sent).Microseconds())/1000)
		}
	}
	slices.Sort(lat)
	res.Done = len(lat)
	if !res.Cut {
		res.Done = units
	}
	if res.Seconds > 0 {
		res.UnitsPerSec = float64(res.Done) / res.Seconds
	}
	if len(lat) > 0 {
		res.P50MS, res.P99MS = benchout.Quantile(lat, 0.5), benchout.Quantile(lat, 0.99)
	}
	return res, nil
}
