package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

func listFlags(name string, args []string, e *env) (clientFlags, error) {
	fs := newFlagSet(name, "", e)
	var cf clientFlags
	cf.register(fs, e)
	return cf, parse(fs, args)
}

func runJobs(ctx context.Context, args []string, e *env) error {
	cf, err := listFlags("jobs", args, e)
	if err != nil {
		return err
	}
	jobs, err := cf.client().Jobs(ctx)
	if err != nil || cf.json {
		if err == nil {
			err = printJSON(e.stdout, jobs)
		}
		return err
	}
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

func runWorkers(ctx context.Context, args []string, e *env) error {
	cf, err := listFlags("workers", args, e)
	if err != nil {
		return err
	}
	ws, err := cf.client().Workers(ctx)
	if err != nil || cf.json {
		if err == nil {
			err = printJSON(e.stdout, ws)
		}
		return err
	}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "WORKER\tSTATE\tTRANSPORT\tSTREAMS\tTHREADS\tCORES\tUNITS\tADDR\tERROR")
	for _, wk := range ws {
		addr := ""
		if len(wk.Info.Endpoints) > 0 {
			addr = wk.Info.Endpoints[0].Addr
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", wk.Info.Name, wk.State, wk.Transport, wk.Streams,
			wk.Info.MaxThreads, wk.Info.Cores, wk.UnitsDone, addr, wk.Error)
	}
	return w.Flush()
}

func runOps(ctx context.Context, args []string, e *env) error {
	cf, err := listFlags("ops", args, e)
	if err != nil {
		return err
	}
	list, err := cf.client().Operations(ctx)
	if err != nil || cf.json {
		if err == nil {
			err = printJSON(e.stdout, list)
		}
		return err
	}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, op := range list {
		var ps []string
		for _, p := range op.Params {
			ps = append(ps, fmt.Sprintf("%s=%s", p.Name, p.Default))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", op.Name, strings.Join(ps, " "), op.Summary)
	}
	return w.Flush()
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
