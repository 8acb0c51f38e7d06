package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/braidhq/braid/api"
)

// listFlags parses the flags of a list command whose usage line is
// "braid NAME synopsis".
func listFlags(name, synopsis string, args []string, e *env) (clientFlags, error) {
	fs := newFlagSet(name, synopsis, e)
	var cf clientFlags
	cf.register(fs, e)
	return cf, parse(fs, args)
}

// runList is a list command: get the list, then print it as JSON or with
// print.
func runList[T any](ctx context.Context, name, synopsis string, args []string, e *env,
	get func(session, context.Context) ([]T, error), print func(*env, []T) error) error {
	cf, err := listFlags(name, synopsis, args, e)
	if err != nil {
		return err
	}
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		list, err := get(s, ctx)
		switch {
		case err != nil:
			return err
		case cf.json:
			return printJSON(e.stdout, list)
		}
		return print(e, list)
	})
}

func runJobs(ctx context.Context, args []string, e *env) error {
	return runList(ctx, "jobs", "", args, e, session.Jobs, printJobs)
}

func runWorkers(ctx context.Context, args []string, e *env) error {
	if len(args) > 0 && args[0] == "rm" {
		return runWorkersRm(ctx, args[1:], e)
	}
	return runList(ctx, "workers", workersSynopsis, args, e, session.Workers, printWorkers)
}

// workersSynopsis is the usage of braid workers and workers rm.
const workersSynopsis = `[--json]
       braid workers rm NAME...  (remove workers that are down: braid workers rm -h)`

// runWorkersRm removes workers that are down from the server's list. The
// registry is guarded by the cluster secret, so it takes the secret as a
// worker does, or else an admin token.
func runWorkersRm(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("workers rm", "NAME...  (workers that are down; stop a live one instead)", e)
	var cf clientFlags
	var sec secretFlags
	cf.register(fs, e)
	sec.register(fs)
	if err := parseArgs(fs, args, -1); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errUsage
	}
	secret, err := sec.value(e)
	if err != nil {
		return err
	}
	if secret == nil && cf.tokenFor() == "" {
		return usageErrorf("removing a worker needs the cluster secret (--secret-file or $BRAID_SECRET) or an admin token (--token or $BRAID_TOKEN)")
	}
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		c := s.Client
		if secret != nil {
			c = c.WithSecret(secret)
		}
		return eachRemoved(e, cf.json, "removed", fs.Args(), printRemoved, func(name string) deleted {
			d := deleted{Kind: "worker", ID: name}
			if err := c.RemoveWorker(ctx, name); err != nil {
				d.Error = removeError(err, secret != nil)
			}
			return d
		})
	})
}

// removeError is the server's message, without the code before it, or a
// hint for a wrong secret (withSecret: the call showed one).
func removeError(err error, withSecret bool) string {
	var ae *api.Error
	if withSecret && errors.As(err, &ae) && ae.Code == api.CodeUnauthorized {
		return "wrong cluster secret: give the server's (--secret-file or $BRAID_SECRET)"
	}
	return apiMessage(err)
}

// apiMessage is the server's message, without the code before it.
func apiMessage(err error) string {
	if ae := (*api.Error)(nil); errors.As(err, &ae) {
		return ae.Message
	}
	return err.Error()
}

func printRemoved(e *env, d deleted) {
	if d.Error != "" {
		fmt.Fprintf(e.stderr, "braid workers rm: %s: %s\n", d.ID, d.Error)
		return
	}
	fmt.Fprintf(e.stdout, "removed worker %s\n", d.ID)
}

func runOps(ctx context.Context, args []string, e *env) error {
	return runList(ctx, "ops", "", args, e, session.Operations, printOps)
}

func printJobs(e *env, jobs []api.Job) error {
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "JOB\tOP\tSTATE\tUNITS\tDONE\tAVG/UNIT\tRECEIVED")
	for _, j := range jobs {
		avg := "-"
		if j.AvgUnitMS > 0 {
			avg = fmt.Sprintf("%.2fms", j.AvgUnitMS)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", j.ID, j.Spec.Op, j.State, j.Progress.Total,
			j.Progress.Done, avg, j.ReceivedAt.Local().Format("15:04:05"))
	}
	return w.Flush()
}

func printWorkers(e *env, ws []api.Worker) error {
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "WORKER\tSTATE\tTRANSPORT\tLENT/STREAMS\tTHREADS\tCORES\tUNITS\tADDR\tERROR")
	for _, wk := range ws {
		addr := ""
		if len(wk.Info.Endpoints) > 0 {
			addr = wk.Info.Endpoints[0].Addr
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d/%d\t%d\t%d\t%d\t%s\t%s\n", wk.Info.Name, wk.State, wk.Transport, wk.Lease, wk.Streams,
			wk.Info.MaxThreads, wk.Info.Cores, wk.UnitsDone, addr, wk.Error)
	}
	return w.Flush()
}

// printOps prints each operation and, under it, each of its parameters:
// type, default, and the doc that gives its range or allowed values.
func printOps(e *env, list []api.Operation) error {
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for i, op := range list {
		if i > 0 {
			fmt.Fprintln(w)
		}
		tiles := ""
		if op.Tileable {
			tiles = " (takes --tiles)"
		}
		switch op.Kind {
		case api.OpWasm:
			tiles += fmt.Sprintf(" [user op v%d, %s, module %.12s]", op.Version, op.ABI, op.Digest)
		case api.OpExec:
			tiles += fmt.Sprintf(" [user op v%d, %s script %.12s]", op.Version, op.Interpreter, op.Digest)
		}
		fmt.Fprintf(w, "%s\t%s%s\n", op.Name, op.Summary, tiles)
		for _, p := range op.Params {
			def := "default " + p.Default
			if p.Default == "" {
				def = ""
			}
			if p.Min != nil || p.Max != nil {
				def += " " + bounds(p)
			}
			fmt.Fprintf(w, "  --param %s=%s\t%s\t%s\n", p.Name, strings.ToUpper(p.Type), strings.TrimSpace(def), p.Doc)
		}
	}
	return w.Flush()
}

// bounds prints a parameter's range, e.g. "0..10" or "0..".
func bounds(p api.Parameter) string {
	f := func(v *float64) string {
		if v == nil {
			return ""
		}
		return fmt.Sprint(*v)
	}
	return "range " + f(p.Min) + ".." + f(p.Max)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
