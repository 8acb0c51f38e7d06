package worker

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
)

// registerLoop registers with one server, then heartbeats; it registers
// again whenever the server forgets the worker (a server restart), and
// backs off while the server is unreachable, to at most one heartbeat
// interval, so that it is back within about a second of a restart. On exit
// it deregisters.
func (w *Worker) registerLoop(ctx context.Context, base string) {
	c := client.New(base).WithHTTPClient(w.cfg.HTTPClient).WithSecret(w.cfg.Secret).WithRetry(client.Retry{For: -1})
	interval, backoff := time.Second, 250*time.Millisecond
	registered := false
	for ctx.Err() == nil {
		var err error
		if !registered {
			var reg api.Registration
			if reg, err = c.RegisterWorker(ctx, w.Info()); err == nil {
				registered, backoff = true, 250*time.Millisecond
				if reg.HeartbeatMS > 0 {
					interval = time.Duration(reg.HeartbeatMS) * time.Millisecond
				}
				w.log.Info("registered", "server", c.URL())
			}
		} else if err = c.Heartbeat(ctx, w.cfg.Name); isNotFound(err) {
			registered = false
			w.log.Info("server forgot this worker; registering again", "server", c.URL())
			continue
		}
		wait := interval
		if err != nil {
			w.log.Warn("server unreachable", "server", c.URL(), "err", err)
			wait, backoff = min(backoff, interval), min(2*backoff, interval)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	if registered {
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = c.DeregisterWorker(dctx, w.cfg.Name)
	}
}

func isNotFound(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == api.CodeNotFound
}

// reannounce sends the worker's current figures to every server.
func (w *Worker) reannounce(ctx context.Context) {
	for _, base := range w.cfg.Servers {
		c := client.New(base).WithHTTPClient(w.cfg.HTTPClient).WithSecret(w.cfg.Secret).WithRetry(client.Retry{For: -1})
		if err := c.UpdateWorker(ctx, w.Info()); err != nil {
			w.log.Warn("re-announcing figures", "server", base, "err", err)
		}
	}
}

func (w *Worker) infoHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/info", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(w.Info())
	})
	return mux
}
