package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/braidhq/braid/api"
)

// registerLoop registers with one server, then heartbeats; it registers
// again whenever the server forgets the worker (a server restart), and
// backs off while the server is unreachable. On exit it deregisters.
func (w *Worker) registerLoop(ctx context.Context, base string) {
	base = strings.TrimRight(base, "/")
	interval, backoff := time.Second, 250*time.Millisecond
	registered := false
	for ctx.Err() == nil {
		var err error
		if !registered {
			var reg api.Registration
			reg, err = w.registerOnce(ctx, base)
			if err == nil {
				registered, backoff = true, 250*time.Millisecond
				if reg.HeartbeatMS > 0 {
					interval = time.Duration(reg.HeartbeatMS) * time.Millisecond
				}
				w.log.Info("registered", "server", base)
			}
		} else {
			var status int
			status, err = w.call(ctx, http.MethodPost, base+"/v1/workers/"+w.cfg.Name+"/heartbeat", nil, nil)
			if status == http.StatusNotFound {
				registered = false
				w.log.Info("server forgot this worker; registering again", "server", base)
				continue
			}
		}
		wait := interval
		if err != nil {
			w.log.Warn("server unreachable", "server", base, "err", err)
			wait, backoff = backoff, min(2*backoff, 5*time.Second)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	if registered {
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, _ = w.call(dctx, http.MethodDelete, base+"/v1/workers/"+w.cfg.Name, nil, nil)
	}
}

func (w *Worker) registerOnce(ctx context.Context, base string) (api.Registration, error) {
	var reg api.Registration
	_, err := w.call(ctx, http.MethodPost, base+"/v1/workers", w.Info(), &reg)
	return reg, err
}

// register re-announces the worker's figures to one server.
func (w *Worker) register(ctx context.Context, base string) error {
	_, err := w.call(ctx, http.MethodPut, strings.TrimRight(base, "/")+"/v1/workers/"+w.cfg.Name, w.Info(), nil)
	return err
}

// call does one JSON request; a non-2xx answer is an error carrying the
// server's message.
func (w *Worker) call(ctx context.Context, method, url string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := w.cfg.HTTPClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var eb api.ErrorBody
		_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&eb)
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, eb.Error.Message)
	}
	if out != nil {
		return resp.StatusCode, json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode, nil
}

func (w *Worker) infoHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/info", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(w.Info())
	})
	return mux
}
