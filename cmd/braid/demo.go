package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/ops/samples"
)

func runDemo(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("demo", "[--transport NAME] [--out DIR] [--repeat N]", e)
	tname := fs.String("transport", transports.Default, "data-plane transport: "+strings.Join(transports.Names, ", "))
	out := fs.String("out", "demo-out", "directory for the outputs")
	repeat := fs.Int("repeat", 100, "units of the repeated blur")
	tiles := fs.String("tiles", "3x3", "tiles of the tiled blur")
	var logs logFlags
	var topts transports.Options
	logs.register(fs)
	logs.level = "warn"
	registerTransportFlags(fs, &topts)
	if err := parse(fs, args); err != nil {
		return err
	}
	log, err := logs.logger(e.stderr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	stack := ""
	if *tname == "sctp" {
		stack = map[string]string{transports.StackUser: " (userspace SCTP over UDP)",
			transports.StackKernel: " (kernel SCTP)"}[transports.Stack(topts)]
	}
	fmt.Fprintf(e.stdout, "starting a server and 2 workers (2 threads each) on loopback over %s%s...\n", *tname, stack)
	topts.Logger = log
	// Auth as `braid server` has it by default: the demo's client shows
	// the first admin token the server wrote to its data directory.
	cl, err := cluster.Start(ctx, cluster.Config{Logger: log, Secret: []byte(randomSecret()), Transports: topts, Auth: true,
		Workers: []cluster.WorkerSpec{{Name: "w1", Threads: 2, Transport: *tname}, {Name: "w2", Threads: 2, Transport: *tname}}})
	if err != nil {
		return err
	}
	defer cl.Close()
	fmt.Fprintf(e.stdout, "server %s, workers up\n\n", cl.Client.URL())
	d := demo{ctx: ctx, c: cl.Client, e: e, out: *out}
	return d.run(*repeat, *tiles)
}

type demo struct {
	ctx context.Context
	c   *client.Client
	e   *env
	out string
}

func (d *demo) run(repeat int, tiles string) error {
	gif, err := d.c.Put(d.ctx, bytes.NewReader(samples.GIF()))
	if err != nil {
		return err
	}
	png, err := d.c.Put(d.ctx, bytes.NewReader(samples.PNG()))
	if err != nil {
		return err
	}
	fmt.Fprintf(d.e.stdout, "uploaded small.gif (%d bytes) as %s\n", gif.Size, gif.ID)
	fmt.Fprintf(d.e.stdout, "uploaded large.png (%d bytes) as %s\n\n", png.Size, png.ID)

	blur := map[string]string{"sigma": "2"}
	rep, err := d.job("repeated blur", api.JobSpec{Op: "blur", Input: gif.ID, Params: blur, Repeat: repeat})
	if err != nil {
		return err
	}
	if err := d.saveRepeat(rep); err != nil {
		return err
	}
	tiled, err := d.job("tiled blur", api.JobSpec{Op: "blur", Input: png.ID, Params: blur, Tiles: tiles})
	if err != nil {
		return err
	}
	whole, err := d.job("whole-image blur", api.JobSpec{Op: "blur", Input: png.ID, Params: blur})
	if err != nil {
		return err
	}
	if err := d.save(tiled.Result, "tiled-blur.png"); err != nil {
		return err
	}
	if err := d.save(whole.Result, "whole-blur.png"); err != nil {
		return err
	}
	same := "yes"
	if tiled.Result != whole.Result {
		same = "NO — this is a bug"
	}
	fmt.Fprintf(d.e.stdout, "stitched %s tiles equal the whole-image blur byte for byte: %s\n\n", tiles, same)
	d.listOutputs(rep.Progress.Total > 1, tiles)
	if tiled.Result != whole.Result {
		return fmt.Errorf("tiled result %s differs from whole-image result %s", tiled.Result, whole.Result)
	}
	return nil
}

// listOutputs says where the outputs are and which file is which;
// manifest says whether the repeated blur had several units, and so a
// manifest for its result.
func (d *demo) listOutputs(manifest bool, tiles string) {
	fmt.Fprintf(d.e.stdout, "outputs in %s/:\n", d.out)
	w := tabwriter.NewWriter(d.e.stdout, 0, 4, 2, ' ', 0)
	if manifest {
		fmt.Fprintln(w, "  blur-repeat-manifest.json\tthe repeated blur's result: a manifest naming each unit's output")
		fmt.Fprintln(w, "  blur-repeat-unit0.gif\tthe repeated blur's first unit's output")
	} else {
		fmt.Fprintln(w, "  blur-repeat-unit0.gif\tthe repeated blur's result: its one unit's output")
	}
	fmt.Fprintf(w, "  tiled-blur.png\tlarge.png blurred in %s tiles, stitched\n", tiles)
	fmt.Fprintln(w, "  whole-blur.png\tlarge.png blurred whole in one unit: what the stitched tiles must equal")
	w.Flush()
}

// job submits a spec, waits, and prints the paper's figures for it.
func (d *demo) job(title string, spec api.JobSpec) (api.Job, error) {
	j, err := d.c.Submit(d.ctx, spec)
	if err != nil {
		return j, err
	}
	j, err = d.c.Wait(d.ctx, j.ID, nil)
	if err != nil {
		return j, err
	}
	if j.State != api.JobDone {
		return j, fmt.Errorf("%s: job %s %s: %s", title, j.ID, j.State, j.Error)
	}
	w := tabwriter.NewWriter(d.e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "%s (%s, %s)\n", title, j.ID, plural(j.Progress.Total, "unit"))
	for _, name := range sortedKeys(j.UnitsPerWorker) {
		fmt.Fprintf(w, "  worker %s\t%s\n", name, plural(j.UnitsPerWorker[name], "unit"))
	}
	fmt.Fprintf(w, "  makespan\t%.1f ms\n", j.MakespanMS)
	fmt.Fprintf(w, "  average per unit\t%.3f ms\n", j.AvgUnitMS)
	fmt.Fprintf(w, "  mean compute per unit\t%.3f ms\n\n", meanCompute(j))
	return j, w.Flush()
}

func meanCompute(j api.Job) float64 {
	if len(j.Units) == 0 {
		return 0
	}
	var sum float64
	for _, u := range j.Units {
		sum += u.ComputeMS
	}
	return sum / float64(len(j.Units))
}

func (d *demo) save(id, name string) error {
	path := filepath.Join(d.out, name)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := d.c.Get(d.ctx, id, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// saveRepeat writes the manifest and the first unit's output; the result
// of a job of one unit is that unit's output, and there is no manifest.
func (d *demo) saveRepeat(j api.Job) error {
	if j.Progress.Total == 1 {
		return d.save(j.Result, "blur-repeat-unit0.gif")
	}
	if err := d.save(j.Result, "blur-repeat-manifest.json"); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(d.out, "blur-repeat-manifest.json"))
	if err != nil {
		return err
	}
	var m api.Manifest
	if err := json.Unmarshal(b, &m); err != nil || len(m.Units) == 0 {
		return fmt.Errorf("bad manifest %s: %v", j.Result, err)
	}
	return d.save(m.Units[0].Output, "blur-repeat-unit0.gif")
}
