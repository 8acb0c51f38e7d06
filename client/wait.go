package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/braidhq/braid/api"
)

// waitPoll is how long one long-poll of Wait asks the server to hold on.
const waitPoll = "30s"

// Wait blocks until the job is done, failed or cancelled (long-polling the
// server, never busy-looping) and returns its final status with per-unit
// statistics. If progress is non-nil it is called with each progress event
// the server streams, on the calling goroutine.
//
// Wait rides through any number of server restarts: each long-poll, and
// each reconnection of the event stream, rides through an outage of up to
// the Retry policy's For; a reconnected stream resumes with the job's
// current state. An error that is not an outage — a 404 because the server
// does not know the job — ends Wait at once.
func (c *Client) Wait(ctx context.Context, id string, progress func(api.Job)) (api.Job, error) {
	if progress != nil {
		if err := c.watch(ctx, id, progress); err != nil {
			return api.Job{}, err
		}
	}
	for {
		var j api.Job
		req := request{method: http.MethodGet, path: "/v1/jobs/" + url.PathEscape(id) + "/wait?timeout=" + waitPoll + "&units=0"}
		if err := c.do(ctx, req, &j); err != nil {
			return j, err
		}
		if j.Terminal() { // now its units, every page of them
			return c.Job(ctx, id, true)
		}
	}
}

// watch follows the job's server-sent events until the "done" event,
// reconnecting when the stream breaks off.
func (c *Client) watch(ctx context.Context, id string, progress func(api.Job)) error {
	req := request{method: http.MethodGet, path: "/v1/jobs/" + url.PathEscape(id) + "/events"}
	return c.call(ctx, req, func(resp *http.Response) error { return readEvents(resp.Body, progress) })
}

// readEvents hands each event of a server-sent event stream to progress.
// It returns nil after the "done" event; a stream that ends before it (the
// server went away) fails with io.ErrUnexpectedEOF, an event that is not
// whole included.
func readEvents(r io.Reader, progress func(api.Job)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) > 0 {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				data = append(data[:0], d...)
			}
			continue
		}
		if len(data) == 0 {
			continue
		}
		var ev api.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			return final(fmt.Errorf("bad event from server: %w", err))
		}
		data = data[:0]
		progress(ev.Job)
		if ev.Type == "done" {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return fmt.Errorf("event stream ended before the job was done: %w", io.ErrUnexpectedEOF)
}
