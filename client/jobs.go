package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/braidhq/braid/api"
)

// Submit submits a job and returns its first status.
func (c *Client) Submit(ctx context.Context, spec api.JobSpec) (api.Job, error) {
	var j api.Job
	return j, c.doJSON(ctx, http.MethodPost, "/v1/jobs", spec, &j)
}

// Job returns a job's status; withUnits adds per-unit statistics.
func (c *Client) Job(ctx context.Context, id string, withUnits bool) (api.Job, error) {
	var j api.Job
	q := "?units=0"
	if withUnits {
		q = "?units=1"
	}
	return j, c.doJSON(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id)+q, nil, &j)
}

// Jobs lists jobs, oldest first.
func (c *Client) Jobs(ctx context.Context) ([]api.Job, error) {
	var out []api.Job
	return out, c.doJSON(ctx, http.MethodGet, "/v1/jobs", nil, &out)
}

// Cancel cancels a job.
func (c *Client) Cancel(ctx context.Context, id string) (api.Job, error) {
	var j api.Job
	return j, c.doJSON(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(id)+"/cancel", nil, &j)
}

// Operations lists the operations catalogue.
func (c *Client) Operations(ctx context.Context) ([]api.Operation, error) {
	var out []api.Operation
	return out, c.doJSON(ctx, http.MethodGet, "/v1/operations", nil, &out)
}

// DeleteJob deletes a finished job (done, failed or cancelled) and its
// record; the objects it made stay. The server answers an *api.Error with
// Code api.CodeNotFound if there is no such job, and api.CodeConflict if
// the job is not finished yet: cancel it first.
func (c *Client) DeleteJob(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/jobs/"+url.PathEscape(id), nil, nil)
}
