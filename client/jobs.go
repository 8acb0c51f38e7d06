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

// Job returns a job's status; withUnits adds per-unit statistics, every
// unit's (the server sends them a page at a time).
func (c *Client) Job(ctx context.Context, id string, withUnits bool) (api.Job, error) {
	if !withUnits {
		var j api.Job
		return j, c.doJSON(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id)+"?units=0", nil, &j)
	}
	return c.jobWithUnits(ctx, "/v1/jobs/"+url.PathEscape(id)+"?units=1")
}

// jobWithUnits GETs a job's status with units at path, and the pages of
// units that follow.
func (c *Client) jobWithUnits(ctx context.Context, path string) (api.Job, error) {
	var j api.Job
	next, err := c.getPage(ctx, path, &j)
	for err == nil && next != "" {
		var more api.Job
		if next, err = c.getPage(ctx, next, &more); err == nil {
			j.Units = append(j.Units, more.Units...)
		}
	}
	return j, err
}

// Jobs lists jobs, oldest first, without per-unit stats nor
// UnitsPerWorker (Job has them).
func (c *Client) Jobs(ctx context.Context) ([]api.Job, error) {
	return list[api.Job](ctx, c, "/v1/jobs")
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
