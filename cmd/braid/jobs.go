package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/scheduler"
	"github.com/braidhq/braid/server"
)

// submitSynopsis is submit's usage line.
const submitSynopsis = "--op OP (--input ID | --inputs ID|FILE|DIR,... [FILE...] | --input-list FILE | --input-job JOB) [--param k=v ...] [--repeat N | --tiles RxC] [--policy P] [--speculate B] [--wait]"

func runSubmit(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("submit", submitSynopsis, e)
	var cf clientFlags
	cf.register(fs, e)
	var params multiFlag
	op := fs.String("op", "", "the `OP` to run: braid ops lists them")
	input := fs.String("input", "", "`ID` of the input object, as braid put prints it (a unique prefix will do)")
	inputs := fs.String("inputs", "", fmt.Sprintf("one unit per object: `IDS`, comma-separated (unique prefixes will do), at most %d;\n"+
		"a FILE or DIR among them is uploaded (a directory's files, as braid put does), and its name names the unit's output", api.MaxInputs))
	inputJob := fs.String("input-job", "", "one unit per unit of `JOB`, on its output, each sent as soon as it exists (a unique prefix will do)")
	inputList := fs.String("input-list", "", fmt.Sprintf("one unit per object listed in `FILE`, one id per line (# comments), up to %d;\nthe list is uploaded and the job submitted in one request", server.MaxUnits))
	fs.Var(&params, "param", "operation parameter `key=value` (repeatable, each key once): braid ops lists them")
	repeat := fs.Int("repeat", 0, fmt.Sprintf("run the operation `N` times on the whole input, 1 to %d (leave it out for one unit)", server.MaxRepeat))
	tiles := fs.String("tiles", "", "cut the image into `RxC` tiles, R and C 1 to 64, and stitch the result")
	policy := fs.String("policy", "dynamic", "assignment policy: "+strings.Join(scheduler.PolicyNames, ", "))
	speculate := fs.String("speculate", "", "re-run stragglers at the end of the job: true or false (default: the policy's)")
	unitTimeout := fs.Duration("unit-timeout", 0, "a user operation's wall-time limit per unit, e.g. 10s (default: the operation's)")
	wait := fs.Bool("wait", false, "wait for the job to finish: print its id on stdout at once, then its final\n"+
		"status on stderr (with --json: the final status on stdout); a failed job exits 1")
	if err := parseArgs(fs, args, -1); err != nil {
		return err
	}
	if err := emptyFlags(fs, "op", "input", "inputs", "input-list", "input-job"); err != nil {
		return err
	}
	items, err := inputItems(fs, *inputs)
	if err != nil {
		return err
	}
	if given := btoi(*input != "") + btoi(*inputs != "") + btoi(*inputList != "") + btoi(*inputJob != ""); *op == "" || given != 1 {
		fmt.Fprintln(e.stderr, "braid submit: --op and one of --input, --inputs, --input-list and --input-job are required")
		fs.Usage()
		return errUsage
	}
	spec, err := jobSpec(fs, *op, *input, params, *repeat, *tiles, *policy, *speculate)
	if err != nil {
		return err
	}
	resolved, err := resolveItems(items)
	if err != nil {
		return err
	}
	if *unitTimeout < 0 || *unitTimeout > 0 && *unitTimeout < time.Millisecond {
		return usageErrorf("--unit-timeout %v: want a positive duration of at least 1ms", *unitTimeout)
	}
	spec.UnitTimeoutMS = unitTimeout.Milliseconds()
	timeout := defaultTimeout
	if *wait {
		timeout = 0
	}
	return cf.run(ctx, e, timeout, func(ctx context.Context, s session) error {
		if err := resolveInputs(ctx, s, &spec, resolved, *inputList); err != nil {
			return err
		}
		if *inputJob != "" {
			if spec.InputJob, err = s.jobID(ctx, *inputJob); err != nil {
				return err
			}
		}
		j, err := s.Submit(ctx, spec)
		if err != nil {
			return err
		}
		if !*wait && cf.json {
			return printJSON(e.stdout, j)
		}
		if !cf.json {
			if _, err := fmt.Fprintln(e.stdout, j.ID); err != nil || !*wait {
				return err
			}
		}
		return waitAndReport(ctx, s, cf, j.ID, e, e.stderr)
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// resolveInputs turns the input flags into the spec's: prefixes into ids,
// files into uploaded objects, and a list file into an uploaded object.
func resolveInputs(ctx context.Context, s session, spec *api.JobSpec, items []inputItem, listFile string) error {
	var err error
	switch {
	case spec.Input != "":
		spec.Input, err = s.objectID(ctx, spec.Input)
	case items != nil:
		return s.resolveInputList(ctx, spec, items)
	case listFile != "":
		list, err := importListed(ctx, s, listFile)
		if err != nil {
			return err
		}
		obj, err := s.Put(ctx, bytes.NewReader(list))
		if err != nil {
			return fmt.Errorf("uploading the input list: %w", err)
		}
		spec.InputList = obj.ID
	}
	return err
}

// importListed reads an input list and has the server import each entry
// of the form s3://BUCKET/KEY (put --from), putting the object's id in its
// place.
func importListed(ctx context.Context, s session, listFile string) ([]byte, error) {
	list, err := os.ReadFile(listFile)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(list), "\n")
	for i, line := range lines {
		if from := strings.TrimSpace(line); strings.HasPrefix(from, "s3://") {
			obj, err := s.Import(ctx, from)
			if err != nil {
				return nil, fmt.Errorf("%s line %d: %w", listFile, i+1, err)
			}
			lines[i] = obj.ID
		}
	}
	return []byte(strings.Join(lines, "\n")), nil
}

// inputItems are the items of --inputs, followed by submit's arguments
// (`--inputs photos/*.png` as the shell expands it); arguments without
// --inputs are refused.
func inputItems(fs *flag.FlagSet, inputs string) ([]string, error) {
	if inputs == "" {
		if fs.NArg() > 0 {
			return nil, strayArgument(fs, fs.Arg(0))
		}
		return nil, nil
	}
	items := strings.Split(inputs, ",")
	for _, arg := range fs.Args() {
		if _, err := os.Stat(arg); err != nil && strings.Contains(arg, "=") {
			return nil, strayArgument(fs, arg)
		}
		items = append(items, arg)
	}
	return items, nil
}

// inputItem is one input of --inputs: an object id (or a unique prefix of
// one), or a file to upload.
type inputItem struct {
	id   string
	file inputFile
}

// resolveItems turns --inputs' items into inputs: a FILE or DIR that
// exists is its files, checked before anything is uploaded; anything else
// is an id. It refuses more inputs than a job may have.
func resolveItems(items []string) ([]inputItem, error) {
	var out []inputItem
	for _, in := range items {
		in = strings.TrimSpace(in)
		if _, err := os.Stat(in); err != nil {
			out = append(out, inputItem{id: in})
			continue
		}
		files, err := inputFiles([]string{in})
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			out = append(out, inputItem{file: f})
		}
	}
	if len(out) > api.MaxInputs {
		return nil, usageErrorf("--inputs: %d inputs, at most %d; list more in a file for --input-list", len(out), api.MaxInputs)
	}
	return out, nil
}

// resolveInputList fills in the spec's Inputs: ids as they are (a prefix
// made whole), files uploaded; a file's name names its input
// (InputNames).
func (s session) resolveInputList(ctx context.Context, spec *api.JobSpec, items []inputItem) error {
	named := false
	for _, it := range items {
		id, name := it.id, it.file.name
		var err error
		if it.file.path == "" {
			id, err = s.objectID(ctx, id)
		} else {
			var obj api.Object
			obj, err = s.PutFile(ctx, it.file.path)
			if err != nil {
				err = fmt.Errorf("uploading %s: %w", it.file.path, err)
			}
			id = obj.ID
		}
		if err != nil {
			return err
		}
		spec.Inputs, spec.InputNames = append(spec.Inputs, id), append(spec.InputNames, name)
		named = named || name != ""
	}
	if !named {
		spec.InputNames = nil
	}
	return nil
}

// jobSpec checks submit's flags and makes the spec they describe.
func jobSpec(fs *flag.FlagSet, op, input string, params multiFlag, repeat int, tiles, policy, speculate string) (api.JobSpec, error) {
	spec := api.JobSpec{Op: op, Input: input, Repeat: repeat, Tiles: tiles, Policy: policy}
	if isSet(fs, "repeat") && (repeat < 1 || repeat > server.MaxRepeat) {
		return spec, usageErrorf("--repeat %d: want 1 to %d (leave it out for one unit)", repeat, server.MaxRepeat)
	}
	if tiles != "" {
		if _, _, err := api.ParseTiles(tiles); err != nil {
			return spec, usageErrorf("--%v", err)
		}
	}
	if repeat > 0 && tiles != "" {
		return spec, usageErrorf("give --repeat or --tiles, not both")
	}
	if !slices.Contains(scheduler.PolicyNames, policy) {
		return spec, usageErrorf("--policy %q: want %s", policy, orList(scheduler.PolicyNames))
	}
	for _, p := range params {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return spec, usageErrorf("--param %q: want key=value", p)
		}
		if old, dup := spec.Params[k]; dup {
			return spec, usageErrorf("--param %s given twice (%s=%s and %s=%s): give each key once", k, k, old, k, v)
		}
		if spec.Params == nil {
			spec.Params = map[string]string{}
		}
		spec.Params[k] = v
	}
	switch speculate {
	case "":
	case "true", "false":
		b := speculate == "true"
		spec.Speculate = &b
	default:
		return spec, usageErrorf("--speculate %q: want true or false", speculate)
	}
	return spec, nil
}

// emptyFlags refuses an empty value given to one of the named flags
// (`--input ""`, or `--input $ID` with $ID empty): each names a thing that
// must be there.
func emptyFlags(fs *flag.FlagSet, names ...string) error {
	for _, name := range names {
		if isSet(fs, name) && fs.Lookup(name).Value.String() == "" {
			return usageErrorf("--%s is empty (is a variable that should hold its value empty?)", name)
		}
	}
	return nil
}

// isSet reports whether the flag name was given.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func jobArg(name string, args []string, e *env) (clientFlags, string, error) {
	fs := newFlagSet(name, "JOB", e)
	var cf clientFlags
	cf.register(fs, e)
	if err := parseArgs(fs, args, 1); err != nil {
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
		if id, err = s.jobID(ctx, id); err != nil {
			return err
		}
		j, err := s.Job(ctx, id, cf.json)
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(e.stdout, j)
		}
		printJob(e.stdout, j)
		return nil
	})
}

func runWait(ctx context.Context, args []string, e *env) error {
	cf, id, err := jobArg("wait", args, e)
	if err != nil {
		return err
	}
	return cf.run(ctx, e, 0, func(ctx context.Context, s session) error {
		if id, err = s.jobID(ctx, id); err != nil {
			return err
		}
		return waitAndReport(ctx, s, cf, id, e, e.stdout)
	})
}

// waitAndReport waits for a job (drawing a progress bar when stderr is a
// terminal) and prints its final status on out, as JSON on stdout with
// --json; a job that did not finish done is an error, and so is a wait
// the user stopped.
func waitAndReport(ctx context.Context, s session, cf clientFlags, id string, e *env, out io.Writer) error {
	var progress func(api.Job)
	switch {
	case !s.line.tty:
		progress = waitingNotes(e.stderr)
	case !cf.json:
		progress = func(j api.Job) { s.line.progress(progressText(j)) }
	}
	j, err := s.Wait(ctx, id, progress)
	s.line.end()
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return &interruptedError{job: id}
		}
		return err
	}
	if cf.json {
		if err := printJSON(e.stdout, j); err != nil {
			return err
		}
	} else {
		printJob(out, j)
	}
	if j.State != api.JobDone {
		if j.Error == "" {
			return fmt.Errorf("job %s %s", j.ID, j.State)
		}
		return fmt.Errorf("job %s %s: %s", j.ID, j.State, j.Error)
	}
	return nil
}

// waitingNotes is the progress of a wait off a terminal, where no
// progress bar is drawn: one line on w when the job starts to wait for a
// worker that can run it, or waits for another reason than before, so
// that a script's log says why nothing happens.
func waitingNotes(w io.Writer) func(api.Job) {
	last := ""
	return func(j api.Job) {
		if j.Waiting != "" && j.Waiting != last {
			fmt.Fprintf(w, "braid: job %s waiting: %s\n", j.ID, j.Waiting)
		}
		last = j.Waiting
	}
}

// interruptedError is a wait the user stopped (Ctrl-C); the job goes on.
type interruptedError struct{ job string }

func (e *interruptedError) Error() string {
	return fmt.Sprintf("stopped waiting; job %s keeps running (braid cancel %s to stop it)", e.job, e.job)
}

// Is makes an interrupted wait errInterrupted, as run reports it.
func (e *interruptedError) Is(target error) bool { return target == errInterrupted }

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

// inputsOf says what a job works on.
func inputsOf(spec api.JobSpec) string {
	switch {
	case len(spec.Inputs) == 1:
		return spec.Inputs[0]
	case len(spec.Inputs) > 1:
		return fmt.Sprintf("%d objects (%.12s…)", len(spec.Inputs), spec.Inputs[0])
	case spec.InputList != "":
		return "the objects listed in " + spec.InputList
	case spec.InputJob != "":
		return "the outputs of job " + spec.InputJob
	}
	return spec.Input
}

// printJob prints a job's status for people.
func printJob(out io.Writer, j api.Job) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "job\t%s\n", j.ID)
	op := j.Spec.Op
	for _, k := range sortedKeys(j.Spec.Params) {
		op += fmt.Sprintf(" %s=%s", k, j.Spec.Params[k])
	}
	fmt.Fprintf(w, "op\t%s on %s\n", op, inputsOf(j.Spec))
	fmt.Fprintf(w, "state\t%s\n", j.State)
	if j.Owner != "" {
		fmt.Fprintf(w, "owner\ttoken %s\n", j.Owner)
	}
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
		fmt.Fprintf(w, "worker %s\t%s\n", name, plural(j.UnitsPerWorker[name], "unit"))
	}
	w.Flush()
}

// plural says n things: "1 unit", "2 units".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func runCancel(ctx context.Context, args []string, e *env) error {
	cf, id, err := jobArg("cancel", args, e)
	if err != nil {
		return err
	}
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		if id, err = s.jobID(ctx, id); err != nil {
			return err
		}
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
