package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/scheduler"
)

func runSubmit(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("submit", "--op OP --input ID [--param k=v ...] [--repeat N | --tiles RxC] [--policy P] [--wait]", e)
	var cf clientFlags
	cf.register(fs, e)
	var params multiFlag
	op := fs.String("op", "", "operation to run (see `braid ops`)")
	input := fs.String("input", "", "input object id (from `braid put`)")
	fs.Var(&params, "param", "operation parameter k=v (repeatable)")
	repeat := fs.Int("repeat", 0, "run the operation N times on the whole input")
	tiles := fs.String("tiles", "", "cut the image into RxC tiles and stitch the result")
	policy := fs.String("policy", "dynamic", "assignment policy: "+strings.Join(scheduler.PolicyNames, ", "))
	speculate := fs.String("speculate", "", "re-run stragglers at the end of the job: true or false (default: policy's)")
	wait := fs.Bool("wait", false, "wait for the job to finish")
	if err := parse(fs, args); err != nil {
		return err
	}
	spec := api.JobSpec{Op: *op, Input: *input, Repeat: *repeat, Tiles: *tiles, Policy: *policy}
	if *op == "" || *input == "" {
		fmt.Fprintln(e.stderr, "braid submit: --op and --input are required")
		fs.Usage()
		return errUsage
	}
	for _, p := range params {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return fmt.Errorf("--param %q: want key=value", p)
		}
		if spec.Params == nil {
			spec.Params = map[string]string{}
		}
		spec.Params[k] = v
	}
	switch *speculate {
	case "":
	case "true", "false":
		b := *speculate == "true"
		spec.Speculate = &b
	default:
		return fmt.Errorf("--speculate %q: want true or false", *speculate)
	}
	timeout := defaultTimeout
	if *wait {
		timeout = 0
	}
	return cf.run(ctx, e, timeout, func(ctx context.Context, s session) error {
		j, err := s.Submit(ctx, spec)
		if err != nil {
			return err
		}
		if !*wait {
			if cf.json {
				return printJSON(e.stdout, j)
			}
			_, err = fmt.Fprintln(e.stdout, j.ID)
			return err
		}
		if !cf.json {
			fmt.Fprintln(e.stderr, j.ID)
		}
		return waitAndReport(ctx, s, cf, j.ID, e)
	})
}

func jobArg(name string, args []string, e *env) (clientFlags, string, error) {
	fs := newFlagSet(name, "JOB", e)
	var cf clientFlags
	cf.register(fs, e)
	if err := parse(fs, args); err != nil {
		return cf, "", err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return cf, "", errUsage
	}
	return cf, fs.Arg(0), nil
}

func runStatus(ctx context.Context, args []string, e *env) error {
	cf, id, err := jobArg("status", args, e)
	if err != nil {
		return err
	}
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		j, err := s.Job(ctx, id, cf.json)
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(e.stdout, j)
		}
		printJob(e, j)
		return nil
	})
}

func runWait(ctx context.Context, args []string, e *env) error {
	cf, id, err := jobArg("wait", args, e)
	if err != nil {
		return err
	}
	return cf.run(ctx, e, 0, func(ctx context.Context, s session) error {
		return waitAndReport(ctx, s, cf, id, e)
	})
}

// waitAndReport waits for a job (drawing a progress bar when stderr is a
// terminal) and prints its final status; a failed job is an error.
func waitAndReport(ctx context.Context, s session, cf clientFlags, id string, e *env) error {
	var progress func(api.Job)
	if !cf.json && s.line.tty {
		progress = func(j api.Job) { s.line.progress(progressText(j)) }
	}
	j, err := s.Wait(ctx, id, progress)
	s.line.end()
	if err != nil {
		return err
	}
	if cf.json {
		if err := printJSON(e.stdout, j); err != nil {
			return err
		}
	} else {
		printJob(e, j)
	}
	if j.State != api.JobDone {
		return fmt.Errorf("job %s %s: %s", j.ID, j.State, j.Error)
	}
	return nil
}

// progressText is the progress bar of a job.
func progressText(j api.Job) string {
	const width = 30
	p := j.Progress
	filled := 0
	if p.Total > 0 {
		filled = width * (p.Done + p.Failed) / p.Total
	}
	bar := strings.Repeat("#", filled) + strings.Repeat(".", width-filled)
	text := fmt.Sprintf("%s [%s] %d/%d units", j.ID, bar, p.Done+p.Failed, p.Total)
	if p.Total == 1 {
		text = strings.TrimSuffix(text, "s")
	}
	if j.Terminal() {
		text += ", " + j.State
	} else {
		sent := max(p.Sent, p.Running) // a server older than Sent counted units in flight as running
		text += fmt.Sprintf(", %d running, %d sent", min(p.Running, sent), sent)
	}
	text += ", " + time.Since(j.ReceivedAt).Round(100*time.Millisecond).String()
	if j.Waiting != "" {
		text += fmt.Sprintf("  (waiting: %s)", j.Waiting)
	}
	return text
}

func printJob(e *env, j api.Job) {
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "job\t%s\n", j.ID)
	op := j.Spec.Op
	for _, k := range sortedKeys(j.Spec.Params) {
		op += fmt.Sprintf(" %s=%s", k, j.Spec.Params[k])
	}
	fmt.Fprintf(w, "op\t%s on %s\n", op, short(j.Spec.Input))
	fmt.Fprintf(w, "state\t%s\n", j.State)
	p := j.Progress
	units := fmt.Sprintf("%d total: %d done, %d failed", p.Total, p.Done, p.Failed)
	if !j.Terminal() {
		sent := max(p.Sent, p.Running) // a server older than Sent counted units in flight as running
		units += fmt.Sprintf(", %d sent (%d running), %d pending", sent, min(p.Running, sent), p.Pending)
	} else if p.Cancelled > 0 {
		units += fmt.Sprintf(", %d cancelled (no result)", p.Cancelled)
	}
	fmt.Fprintf(w, "units\t%s\n", units)
	if j.Waiting != "" {
		fmt.Fprintf(w, "waiting\t%s\n", j.Waiting)
	}
	if j.Error != "" {
		fmt.Fprintf(w, "error\t%s\n", j.Error)
	}
	if j.Result != "" {
		fmt.Fprintf(w, "result\t%s\n", j.Result)
	}
	if j.MakespanMS > 0 {
		fmt.Fprintf(w, "makespan\t%.1f ms\n", j.MakespanMS)
		fmt.Fprintf(w, "avg per unit\t%.3f ms  (makespan / units, the paper's metric)\n", j.AvgUnitMS)
	}
	for _, name := range sortedKeys(j.UnitsPerWorker) {
		n, word := j.UnitsPerWorker[name], "units"
		if n == 1 {
			word = "unit"
		}
		fmt.Fprintf(w, "worker %s\t%d %s\n", name, n, word)
	}
	w.Flush()
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func runCancel(ctx context.Context, args []string, e *env) error {
	cf, id, err := jobArg("cancel", args, e)
	if err != nil {
		return err
	}
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		j, err := s.Cancel(ctx, id)
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(e.stdout, j)
		}
		_, err = fmt.Fprintf(e.stdout, "%s %s\n", j.ID, j.State)
		return err
	})
}
