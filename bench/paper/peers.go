package paper

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/ops/samples"
)

// peerFile is what bench/peers/dask_blur.py writes.
type peerFile struct {
	Label string `json:"label"`
	Runs  []struct {
		Units      int     `json:"units"`
		Run        int     `json:"run"`
		AvgUnitMS  float64 `json:"avg_unit_ms"`
		MakespanMS float64 `json:"makespan_ms"`
	} `json:"runs"`
}

// loadPeer reads a peer's results, if a file was given.
func (r *Result) loadPeer(path string) error {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("paper: peer results: %w", err)
	}
	var pf peerFile
	if err := json.Unmarshal(b, &pf); err != nil {
		return fmt.Errorf("paper: peer results %s: %w", path, err)
	}
	for _, run := range pf.Runs {
		r.Peer = append(r.Peer, Record{Line: pf.Label, Transport: "dask", Workers: 2, Threads: "2:2",
			Policy: "dask", Units: run.Units, Run: run.Run, AvgUnitMS: run.AvgUnitMS, MakespanMS: run.MakespanMS})
	}
	return nil
}

// Dask describes a run of bench/peers/dask_blur.py.
type Dask struct {
	Python, Script string // default python3, bench/peers/dask_blur.py
	Units          []int
	Runs           int
	Timeout        time.Duration // default 15 minutes
}

// RunDask runs the Dask peer on the sample GIF and returns the path of its
// results file in out.
func RunDask(ctx context.Context, d Dask, out string) (string, error) {
	if d.Python == "" {
		d.Python = "python3"
	}
	if d.Script == "" {
		d.Script = filepath.Join("bench", "peers", "dask_blur.py")
	}
	if d.Timeout == 0 {
		d.Timeout = 15 * time.Minute
	}
	gif := filepath.Join(out, "small.gif")
	if err := os.WriteFile(gif, samples.GIF(), 0o644); err != nil {
		return "", fmt.Errorf("paper: %w", err)
	}
	res := filepath.Join(out, "dask.json")
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.Python, d.Script, "--image", gif, "--units", joinInts(d.Units),
		"--runs", strconv.Itoa(d.Runs), "--out", res)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("paper: dask peer (pip install -r bench/peers/requirements.txt): %w", err)
	}
	return res, nil
}

func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}
