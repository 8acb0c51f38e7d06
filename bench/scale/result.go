package scale

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/braidhq/braid/internal/benchout"
)

// Result is one run: a fleet of workers brought up, one job run on it.
type Result struct {
	Provenance *benchout.Provenance `json:"provenance,omitempty"`
	Workers    int                  `json:"workers"`
	Threads    int                  `json:"threads"`
	Units      int                  `json:"units"`
	UnitBytes  int                  `json:"unit_bytes"`
	ComputeMS  float64              `json:"compute_ms"`
	Transport  string               `json:"transport"`
	LivenessMS float64              `json:"liveness_ms,omitempty"`
	// ServerNice is the server's nice value; the bench and its simulated
	// workers run at 0 (priority.go).
	ServerNice int `json:"server_nice"`
	// FileLimit is the RLIMIT_NOFILE the bench raised itself (and the
	// server) to.
	FileLimit uint64 `json:"file_limit"`
	// LoadAvg is the machine's 1-minute load average when the run began:
	// other work shares the cores.
	LoadAvg float64 `json:"load_avg"`

	// RegisterS is from the first registration sent to every worker's
	// association up.
	RegisterS float64 `json:"register_s"`
	// HeartbeatsPerS and IdleCPUPct are measured over a window with every
	// worker up and no job, a heartbeat interval long (at least 5 s) and
	// starting an interval after the last came up: the heartbeats the
	// server answered per second, and the server's CPU then, in percent of
	// one core.
	HeartbeatsPerS float64 `json:"heartbeats_per_s"`
	HeartbeatMS    float64 `json:"heartbeat_ms"`
	IdleCPUPct     float64 `json:"idle_cpu_pct"`

	// MakespanS is from the submit to the job's terminal state, as the
	// bench saw it; UnitsPerS is Units ÷ MakespanS.
	MakespanS float64 `json:"makespan_s"`
	UnitsPerS float64 `json:"units_per_s"`
	// ServerBytesPerUnit is what the server's Go heap holds per unit of
	// the running job: its live heap (after a collection) at a quarter,
	// half and three quarters of the job, the most of the three, less its
	// live heap before the submit, ÷ Units. RetainedBytesPerUnit is the
	// same once the job is finished and the server has forgotten its
	// scheduling state. HeapInusePerUnit is the peak of the heap in use
	// (sampled every 250 ms, garbage not yet collected included) less the
	// heap in use before, ÷ Units: with the Go collector's default pacing
	// the heap in use reaches about twice the live heap, so this counts
	// the headroom over everything live, the workers' associations
	// included, not only the units.
	ServerBytesPerUnit   float64 `json:"server_bytes_per_unit"`
	RetainedBytesPerUnit float64 `json:"retained_bytes_per_unit"`
	HeapInusePerUnit     float64 `json:"heap_inuse_bytes_per_unit"`
	LiveBeforeBytes      uint64  `json:"live_heap_before_bytes"`
	LivePeakBytes        uint64  `json:"live_heap_peak_bytes"`
	HeapBeforeBytes      uint64  `json:"heap_before_bytes"`
	HeapPeakBytes        uint64  `json:"heap_peak_bytes"`
	// APIP99MS and APIP50MS are over every poll of the first pages of GET
	// /v1/workers and GET /v1/jobs while the job ran, asked by a process of
	// their own at the server's nice (pollproc.go), not by the bench behind
	// it; the next two split them.
	APIP99MS     float64 `json:"api_p99_ms"`
	APIP50MS     float64 `json:"api_p50_ms"`
	WorkersP99MS float64 `json:"workers_page_p99_ms"`
	JobsP99MS    float64 `json:"jobs_page_p99_ms"`
	// BaselineP99MS is the p99 of GET /healthz polled as often, which
	// neither the dispatch loop nor a list answers: what the machine's load
	// and the two processes' scheduling alone add to a request.
	BaselineP99MS float64 `json:"baseline_p99_ms"`
	APIPolls      int     `json:"api_polls"`
	APIPollErrors int     `json:"api_poll_errors"`
	// APISlowest are the ten slowest polls of the three paths, with when
	// each was taken: whether the tail is one moment (the job's start, a
	// garbage collection) or spread over the run.
	APISlowest []SlowPoll `json:"api_slowest,omitempty"`
	// ServerCPUS is the server's CPU time (user + system) while the job
	// ran; BenchCPUS this process's over the whole run.
	ServerCPUS float64 `json:"server_cpu_s"`
	BenchCPUS  float64 `json:"bench_cpu_s"`
	// ServerRSSPeak is the server's peak resident memory (VmHWM, and the
	// most sampled), ServerRSS at the end; ServerFDs its peak open files.
	ServerRSSPeak int64 `json:"server_rss_peak_bytes"`
	ServerRSS     int64 `json:"server_rss_bytes"`
	ServerFDs     int   `json:"server_fds"`
	// StateDBBytes is the size of the server's state.db at the end.
	StateDBBytes int64 `json:"state_db_bytes"`

	// Restarted says the server was killed and started again mid-job.
	// Answered is how many distinct units the workers answered, Results
	// how many results they sent (duplicates too); Done and Counted are
	// the job's done units and the sum of its units per worker. A run
	// passes when Done, Counted and Answered are all Units.
	Restarted bool `json:"restarted,omitempty"`
	Answered  int  `json:"answered"`
	Results   int  `json:"results"`
	Done      int  `json:"done"`
	Counted   int  `json:"counted"`
}

// OK reports whether every unit was run and counted exactly once.
func (r Result) OK() bool {
	return r.Done == r.Units && r.Counted == r.Units && r.Answered == r.Units
}

// WriteTable writes results as an aligned table.
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workers\tunits\tregister s\tunits/s\tB/unit\tretained B/unit\tAPI p99 ms\tbase p99 ms\tbeats/s\tidle CPU %\tserver CPU s\tRSS peak MiB\tfds\tok\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%d\t%d\t%.1f\t%s\t%.0f\t%.0f\t%.1f\t%.1f\t%.0f\t%.1f\t%.1f\t%.0f\t%d\t%v\t\n", r.Workers, r.Units, r.RegisterS,
			benchout.UnitRate(r.UnitsPerS), r.ServerBytesPerUnit, r.RetainedBytesPerUnit, r.APIP99MS, r.BaselineP99MS, r.HeartbeatsPerS,
			r.IdleCPUPct, r.ServerCPUS, float64(r.ServerRSSPeak)/(1<<20), r.ServerFDs, r.OK())
	}
	return tw.Flush()
}
