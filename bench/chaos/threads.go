package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
)

// checkThreads checks that no worker thread leaked: every worker is up,
// idle workers run nothing, and a job on the one server gets every thread
// of every worker.
func checkThreads(ctx context.Context, cfg *Config, c *cluster, o *observer, cl *client.Client, want expected) []string {
	if err := c.waitUp(ctx, o, 30*time.Second); err != nil {
		return []string{err.Error()}
	}
	ws, err := cl.Workers(ctx)
	if err != nil {
		return []string{fmt.Sprintf("listing workers: %v", err)}
	}
	var bad []string
	for _, w := range ws {
		if err := waitIdle(ctx, w.Info.InfoURL, 15*time.Second); err != nil {
			bad = append(bad, fmt.Sprintf("worker %s: %v", w.Info.Name, err))
		}
	}
	probe := api.JobSpec{Op: "blur", Input: want.gif, Params: repeatParams, Repeat: 40 * cfg.Workers * cfg.Threads, Speculate: new(bool)}
	j, err := cl.Submit(ctx, probe)
	if err != nil {
		return append(bad, fmt.Sprintf("probe job: %v", err))
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, ok := o.waitFor(pctx, func(v map[string]api.Worker) bool {
		for _, n := range c.names {
			if v[n].State != api.WorkerUp || v[n].Lease != cfg.Threads {
				return false
			}
		}
		return true
	})
	if !ok {
		bad = append(bad, fmt.Sprintf("the probe job never got all %d threads of every worker", cfg.Threads))
	}
	var v verdict
	return append(bad, checkJob(ctx, cl, waitJob(ctx, cl, j.ID), want, &v)...)
}

// waitIdle waits until the worker at info reports every thread free.
func waitIdle(ctx context.Context, info string, d time.Duration) error {
	deadline := time.Now().Add(d)
	var last api.WorkerInfo
	for time.Now().Before(deadline) {
		if err := getInfo(ctx, info, &last); err == nil && last.FreeThreads == last.MaxThreads {
			return nil
		}
		sleep(ctx, 100*time.Millisecond)
	}
	return fmt.Errorf("still runs %d units %v after the faults, with no job left", last.MaxThreads-last.FreeThreads, d)
}

func getInfo(ctx context.Context, base string, out *api.WorkerInfo) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/info", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}

// waitJob waits for job id and returns it (checkJob reports its state).
func waitJob(ctx context.Context, cl *client.Client, id string) string {
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, _ = cl.Wait(wctx, id, nil)
	return id
}
