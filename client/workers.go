package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/braidhq/braid/api"
)

// Workers lists registered workers, by name.
func (c *Client) Workers(ctx context.Context) ([]api.Worker, error) {
	return list[api.Worker](ctx, c, "/v1/workers")
}

// RemoveWorker removes a worker that is down from the server's list, as
// `braid workers rm` does. It needs the cluster secret (WithSecret). A
// worker that is up or connecting is not removed: the answer is an
// *api.Error with Code api.CodeConflict (stop the worker instead; it
// deregisters as it stops). An unknown worker is api.CodeNotFound.
func (c *Client) RemoveWorker(ctx context.Context, name string) error {
	return c.doJSON(ctx, http.MethodDelete, workerPath(name, ""), nil, nil)
}

// The calls a worker makes. A server that has forgotten the worker (it
// restarted, or timed the worker out) answers Heartbeat with an *api.Error
// whose Code is api.CodeNotFound: register again. The epoch is the worker
// process's (api.WorkerInfo.Epoch): a server refuses the calls of a
// process whose name another process has since taken, with
// api.CodeConflict. Rejected tells the answers that retrying cannot change.

// RegisterWorker registers a worker, or replaces its figures. A name held
// by another live worker process is refused with api.CodeConflict.
func (c *Client) RegisterWorker(ctx context.Context, info api.WorkerInfo) (api.Registration, error) {
	var reg api.Registration
	return reg, c.doJSON(ctx, http.MethodPost, "/v1/workers", info, &reg)
}

// UpdateWorker re-announces a registered worker's figures.
func (c *Client) UpdateWorker(ctx context.Context, info api.WorkerInfo) error {
	return c.doJSON(ctx, http.MethodPut, "/v1/workers/"+url.PathEscape(info.Name), info, nil)
}

// Heartbeat tells the server that the worker process epoch is alive (0:
// whichever process holds the name).
func (c *Client) Heartbeat(ctx context.Context, name string, epoch uint64) error {
	_, err := c.Beat(ctx, name, epoch)
	return err
}

// Beat is Heartbeat, returning the server's answer: how often it wants
// the next heartbeats (a server with many workers asks each for fewer;
// HeartbeatMS 0 from a server that does not say).
func (c *Client) Beat(ctx context.Context, name string, epoch uint64) (api.Beat, error) {
	var b api.Beat
	err := c.call(ctx, request{method: http.MethodPost, path: workerPath(name, "/heartbeat") + epochQuery(epoch)},
		func(resp *http.Response) error {
			if resp.StatusCode == http.StatusNoContent {
				return nil // a server from before heartbeats were answered
			}
			return json.NewDecoder(resp.Body).Decode(&b)
		})
	return b, err
}

// DeregisterWorker removes the worker process epoch's registration; its
// units in flight go back to the queue. With epoch 0 it is RemoveWorker.
func (c *Client) DeregisterWorker(ctx context.Context, name string, epoch uint64) error {
	return c.doJSON(ctx, http.MethodDelete, workerPath(name, "")+epochQuery(epoch), nil, nil)
}

func workerPath(name, tail string) string { return "/v1/workers/" + url.PathEscape(name) + tail }

func epochQuery(epoch uint64) string {
	if epoch == 0 {
		return ""
	}
	return "?epoch=" + strconv.FormatUint(epoch, 10)
}

// Rejected reports whether err is a server's answer that making the same
// call again cannot change: a 4xx such as a wrong secret (unauthorized),
// invalid figures (bad_parameter), a URL that is not a braid server's API
// (not_found, *WrongURLError), a name in use (conflict), or an answer braid did not write
// (*NotBraidError) that is a 4xx or a 2xx: another HTTP service answers at
// the URL. Connection failures, 5xx answers, 408 and 429 are not.
func Rejected(err error) bool {
	var ue *unavailableError
	if errors.As(err, &ue) {
		return false
	}
	var ut *UntrustedError
	var wu *WrongURLError
	if errors.As(err, &ut) || errors.As(err, &wu) {
		return true
	}
	var nb *NotBraidError
	if errors.As(err, &nb) {
		return nb.StatusCode/100 == 2 || permanentStatus(nb.StatusCode)
	}
	var ae *api.Error
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.Code {
	case api.CodeInternal, api.CodeUnavailable, api.CodeTimeout:
		return false
	}
	return true
}

// permanentStatus reports whether an HTTP status refuses a request for
// good: a 4xx other than 408 (request timeout) and 429 (too many requests).
func permanentStatus(code int) bool {
	return code/100 == 4 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests
}
