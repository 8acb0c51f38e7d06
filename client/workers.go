package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/braidhq/braid/api"
)

// Workers lists registered workers.
func (c *Client) Workers(ctx context.Context) ([]api.Worker, error) {
	var out []api.Worker
	return out, c.doJSON(ctx, http.MethodGet, "/v1/workers", nil, &out)
}

// The calls a worker makes. A server that has forgotten the worker (it
// restarted, or timed the worker out) answers Heartbeat with an *api.Error
// whose Code is api.CodeNotFound: register again.

// RegisterWorker registers a worker, or replaces its figures.
func (c *Client) RegisterWorker(ctx context.Context, info api.WorkerInfo) (api.Registration, error) {
	var reg api.Registration
	return reg, c.doJSON(ctx, http.MethodPost, "/v1/workers", info, &reg)
}

// UpdateWorker re-announces a registered worker's figures.
func (c *Client) UpdateWorker(ctx context.Context, info api.WorkerInfo) error {
	return c.doJSON(ctx, http.MethodPut, "/v1/workers/"+url.PathEscape(info.Name), info, nil)
}

// Heartbeat tells the server the worker is alive.
func (c *Client) Heartbeat(ctx context.Context, name string) error {
	return c.doJSON(ctx, http.MethodPost, "/v1/workers/"+url.PathEscape(name)+"/heartbeat", nil, nil)
}

// DeregisterWorker removes a worker; its units in flight go back to the
// queue.
func (c *Client) DeregisterWorker(ctx context.Context, name string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/workers/"+url.PathEscape(name), nil, nil)
}
