package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/braidhq/braid/api"
)

// Wait blocks until the job is done, failed or cancelled (long-polling the
// server, never busy-looping) and returns its final status with per-unit
// statistics. If progress is non-nil it is called with each progress event
// the server streams.
func (c *Client) Wait(ctx context.Context, id string, progress func(api.Job)) (api.Job, error) {
	if progress != nil {
		if err := c.watch(ctx, id, progress); err != nil && ctx.Err() != nil {
			return api.Job{}, ctx.Err()
		}
	}
	for {
		var j api.Job
		err := c.doJSON(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id)+"/wait?timeout=30s&units=1", nil, &j)
		if err != nil || j.Terminal() {
			return j, err
		}
	}
}

// watch follows the job's server-sent events until the "done" event.
func (c *Client) watch(ctx context.Context, id string, progress func(api.Job)) error {
	resp, err := c.send(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id)+"/events", nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev api.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return fmt.Errorf("bad event from server: %w", err)
		}
		progress(ev.Job)
		if ev.Type == "done" {
			return nil
		}
	}
	return sc.Err()
}
