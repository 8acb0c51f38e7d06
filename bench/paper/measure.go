package paper

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/braidhq/braid/api"
)

// Record is one run: one job of Units units on one line.
type Record struct {
	Figure         string         `json:"figure"`
	Line           string         `json:"line"`
	Transport      string         `json:"transport"`
	Workers        int            `json:"workers"`
	Threads        string         `json:"threads"`
	Slow           bool           `json:"slow_worker"`
	Policy         string         `json:"policy"`
	Speculate      bool           `json:"speculate"`
	Units          int            `json:"units"`
	Run            int            `json:"run"`
	AvgUnitMS      float64        `json:"avg_unit_ms"`
	MakespanMS     float64        `json:"makespan_ms"`
	UnitsPerWorker map[string]int `json:"units_per_worker"`
	// Means over the job's units, from the per-unit stats of the status.
	QueuedMS  float64 `json:"mean_queued_ms"`
	ComputeMS float64 `json:"mean_compute_ms"`
	// TransitMS is returned − sent − queued − compute: the time a unit
	// spent on the wire and in the two ends' I/O paths.
	TransitMS float64 `json:"mean_transit_ms"`
	// WorkerCPUMS and ServerCPUMS are CPU time per unit, from submitting
	// the job to its end: all worker processes together (from /proc, to
	// 10 ms), and the bench process, which hosts the server.
	WorkerCPUMS float64 `json:"worker_cpu_ms_per_unit,omitempty"`
	ServerCPUMS float64 `json:"server_cpu_ms_per_unit,omitempty"`
}

// blurSpec is the paper's unit: a blur of the whole GIF.
func blurSpec(input string, units int, l line) api.JobSpec {
	spec := l.Speculate
	return api.JobSpec{Op: "blur", Input: input, Params: map[string]string{"sigma": "2"}, Repeat: units,
		Policy: l.Policy, Speculate: &spec}
}

// runJob submits one job, waits for it, and returns its record.
func (f *fleet) runJob(ctx context.Context, cfg *Config, l line, units, run int) (Record, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.JobTimeout)
	defer cancel()
	w0, s0 := f.workersCPU(), selfCPU()
	j, err := f.client.Submit(ctx, blurSpec(f.input, units, l))
	if err != nil {
		return Record{}, fmt.Errorf("paper: submit: %w", err)
	}
	if _, err = f.client.Wait(ctx, j.ID, nil); err != nil {
		_, _ = f.client.Cancel(context.Background(), j.ID)
		return Record{}, fmt.Errorf("paper: wait for %s: %w", j.ID, err)
	}
	if j, err = f.client.Job(ctx, j.ID, true); err != nil {
		return Record{}, fmt.Errorf("paper: status of %s: %w", j.ID, err)
	}
	if j.State != api.JobDone {
		return Record{}, fmt.Errorf("paper: job %s %s: %s", j.ID, j.State, j.Error)
	}
	rec := newRecord(l, units, run, j)
	rec.WorkerCPUMS = ms(f.workersCPU()-w0) / float64(units)
	rec.ServerCPUMS = ms(selfCPU()-s0) / float64(units)
	return rec, nil
}

// workersCPU is the CPU time the worker processes have used so far.
func (f *fleet) workersCPU() time.Duration {
	var t time.Duration
	for _, c := range f.procs {
		t += procCPU(c.Process.Pid)
	}
	return t
}

// procCPU is a process's user + system time from /proc/PID/stat, or 0.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	fs := strings.Fields(string(b[i+1:]))
	if len(fs) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(fs[11], 10, 64)
	stime, err2 := strconv.ParseInt(fs[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	// Linux reports in USER_HZ, 100 per second on every architecture Go
	// supports there.
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// selfCPU is this process's user + system time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func newRecord(l line, units, run int, j api.Job) Record {
	r := Record{Line: l.Label, Transport: l.Workers[0].Transport, Workers: len(l.Workers), Threads: l.threads(),
		Slow: l.slow(), Policy: l.Policy, Speculate: l.Speculate, Units: units, Run: run,
		AvgUnitMS: j.AvgUnitMS, MakespanMS: j.MakespanMS, UnitsPerWorker: j.UnitsPerWorker}
	var n float64
	for _, u := range j.Units {
		if u.Sent == nil || u.Returned == nil {
			continue
		}
		n++
		r.QueuedMS += u.QueuedMS
		r.ComputeMS += u.ComputeMS
		r.TransitMS += float64(u.Returned.Sub(*u.Sent))/float64(time.Millisecond) - u.QueuedMS - u.ComputeMS
	}
	if n > 0 {
		r.QueuedMS, r.ComputeMS, r.TransitMS = r.QueuedMS/n, r.ComputeMS/n, r.TransitMS/n
	}
	return r
}

// measureSetup starts the worker processes of ls (which share a setup) and
// runs every line, every number of units, cfg.Runs times: run by run, so
// that slow drifts of the machine spread over all counts.
func measureSetup(ctx context.Context, cfg *Config, ls []line) (map[string][]Record, error) {
	f, err := startFleet(ctx, cfg, ls[0].Workers)
	if err != nil {
		return nil, err
	}
	defer f.close()
	out := map[string][]Record{}
	for _, l := range ls {
		if !cfg.Quick {
			if _, err := f.runJob(ctx, cfg, l, 10, 0); err != nil { // warm-up, not recorded
				return out, fmt.Errorf("%s: warm-up: %w", l.Label, err)
			}
		}
		for run := 1; run <= cfg.Runs; run++ {
			for _, n := range cfg.Units {
				r, err := f.runJob(ctx, cfg, l, n, run)
				if err != nil {
					return out, fmt.Errorf("%s, %d units: %w", l.Label, n, err)
				}
				out[l.key()] = append(out[l.key()], r)
			}
		}
		fmt.Fprintf(cfg.Log, "  %-50s done\n", l.Label)
	}
	return out, nil
}
