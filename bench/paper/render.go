package paper

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/braidhq/braid/internal/benchout"
)

// runInfo is run.json: what Render needs besides the figures' JSON.
type runInfo struct {
	Units    []int   `json:"units"`
	Runs     int     `json:"runs"`
	Quick    bool    `json:"quick"`
	SlowCPUs float64 `json:"slow_cpus"`
	// MachineCPUs is absent from runs made before normal workers were
	// capped: they read as uncapped.
	MachineCPUs float64       `json:"machine_cpus,omitempty"`
	Cores       int           `json:"cores"`
	Command     string        `json:"command"`
	Floor       Floor         `json:"floor"`
	Notes       []string      `json:"notes,omitempty"`
	Started     time.Time     `json:"started"`
	Elapsed     time.Duration `json:"elapsed_ns"`
	LoadAvg     string        `json:"load_avg,omitempty"`
	// Provenance is absent from runs made before it was recorded.
	Provenance *benchout.Provenance `json:"provenance,omitempty"`
}

func (r *Result) writeInfo() error {
	c := r.Config
	if r.Provenance == nil {
		p := benchout.Here()
		r.Provenance = &p
	}
	return writeJSON(filepath.Join(c.Out, "run.json"), runInfo{Units: c.Units, Runs: c.Runs, Quick: c.Quick,
		SlowCPUs: c.SlowCPUs, MachineCPUs: c.MachineCPUs, Cores: c.Cores, Command: c.Command, Floor: r.Floor, Notes: r.Notes,
		Started: r.Started, Elapsed: r.Elapsed, LoadAvg: r.LoadAvg, Provenance: r.Provenance})
}

// Render redraws the figures and REPORT.md of an earlier run in cfg.Out
// from its JSON files, adding cfg.PeerResults: a peer measured after the
// run (so as not to share the machine with it) joins the plots this way.
func Render(cfg Config) (*Result, error) {
	var info runInfo
	if err := readJSON(filepath.Join(cfg.Out, "run.json"), &info); err != nil {
		return nil, err
	}
	cfg.Units, cfg.Runs, cfg.Quick, cfg.SlowCPUs, cfg.Cores = info.Units, info.Runs, info.Quick, info.SlowCPUs, info.Cores
	cfg.MachineCPUs = info.MachineCPUs
	if cfg.MachineCPUs == 0 {
		cfg.MachineCPUs = -1
	}
	if !strings.Contains(info.Command, cfg.Command) {
		cfg.Command = info.Command + "\n" + cfg.Command
	} else {
		cfg.Command = info.Command
	}
	res := &Result{Config: cfg, Floor: info.Floor, Notes: info.Notes, Started: info.Started, Elapsed: info.Elapsed,
		LoadAvg: info.LoadAvg, Measured: map[string][]Record{}, Provenance: info.Provenance}
	if res.Provenance == nil {
		res.Provenance = benchout.Unrecorded() // not this build's: the run is older
	}
	figs, err := res.readFigures()
	if err != nil {
		return nil, err
	}
	peer := cfg.PeerResults
	if saved := filepath.Join(cfg.Out, "dask.json"); peer == "" && fileExists(saved) {
		peer = saved // a peer measured with --dask stays on the plots
	}
	if err := res.loadPeer(peer); err != nil {
		return nil, err
	}
	return res, joinErrs(res.write(figs))
}

// readFigures reads the figN.json files there are and files their runs
// under the lines' keys.
func (r *Result) readFigures() ([]figure, error) {
	var out []figure
	for _, f := range figures() {
		var fr FigureResult
		err := readJSON(filepath.Join(r.Config.Out, f.ID+".json"), &fr)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, f)
		for _, l := range f.Lines {
			if len(r.Measured[l.key()]) == 0 {
				r.Measured[l.key()] = runsOf(fr.Records, l.Label)
			}
		}
	}
	return out, nil
}

func runsOf(rs []Record, label string) []Record {
	var out []Record
	for _, r := range rs {
		if r.Line == label {
			out = append(out, r)
		}
	}
	return out
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("paper: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("paper: %s: %w", path, err)
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
