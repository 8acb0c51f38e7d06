// Package client is the Go client of braid's HTTP control plane: upload and
// download objects, submit jobs, watch and wait for them, list workers.
//
// Errors from the server come back as *api.Error, whose Code is stable:
//
//	var ae *api.Error
//	if errors.As(err, &ae) && ae.Code == api.CodeUnknownOp { ... }
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
	"os"
	"strings"

	"github.com/braidhq/braid/api"
)

// DefaultServer is used when neither a URL nor $BRAID_SERVER is given.
const DefaultServer = "http://127.0.0.1:7070"

// Client talks to one braid server. It is safe for concurrent use.
type Client struct {
	base        string
	http        *http.Client
	workerToken string // sent with worker-registry calls
}

// New returns a client for the server at base (e.g. http://127.0.0.1:7070).
// An empty base means $BRAID_SERVER, else DefaultServer.
func New(base string) *Client {
	if base == "" {
		base = os.Getenv("BRAID_SERVER")
	}
	if base == "" {
		base = DefaultServer
	}
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return &Client{base: strings.TrimRight(base, "/"), http: &http.Client{}}
}

// URL is the server's base URL.
func (c *Client) URL() string { return c.base }

// WithHTTPClient returns a copy of c that sends its requests with hc (for
// timeouts or transports of the caller's choosing).
func (c *Client) WithHTTPClient(hc *http.Client) *Client {
	cp := *c
	cp.http = hc
	return &cp
}

// WithSecret returns a copy of c that proves knowledge of the cluster secret
// (by the token api.WorkerToken derives from it) on the calls that change the
// worker registry.
func (c *Client) WithSecret(secret []byte) *Client {
	cp := *c
	cp.workerToken = api.WorkerToken(secret)
	return &cp
}

// send does one request and returns the response if it is a 2xx; any other
// status becomes an *api.Error. The caller closes the body.
func (c *Client) send(ctx context.Context, method, path string, body io.Reader, ctype string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if c.workerToken != "" {
		req.Header.Set(api.WorkerTokenHeader, c.workerToken)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("braid server %s: %w", c.base, err)
	}
	if err := checkStatus(resp); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// do sends a request and decodes a JSON answer into out (if non-nil).
func (c *Client) do(ctx context.Context, method, path string, body io.Reader, ctype string, out any) error {
	resp, err := c.send(ctx, method, path, body, ctype)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// checkStatus turns a non-2xx response into an *api.Error.
func checkStatus(resp *http.Response) error {
	if resp.StatusCode/100 == 2 {
		return nil
	}
	var eb api.ErrorBody
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(b, &eb) != nil || eb.Error.Code == "" {
		return &api.Error{Code: fmt.Sprintf("http_%d", resp.StatusCode), Message: strings.TrimSpace(string(b))}
	}
	return &eb.Error
}

func (c *Client) doJSON(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	ctype := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body, ctype = bytes.NewReader(b), "application/json"
	}
	return c.do(ctx, method, path, body, ctype, out)
}

// Put uploads r as an object; the server streams it to disk.
func (c *Client) Put(ctx context.Context, r io.Reader) (api.Object, error) {
	var o api.Object
	err := c.do(ctx, http.MethodPost, "/v1/objects", r, "application/octet-stream", &o)
	return o, err
}

// PutFile uploads a file.
func (c *Client) PutFile(ctx context.Context, path string) (api.Object, error) {
	f, err := os.Open(path)
	if err != nil {
		return api.Object{}, err
	}
	defer f.Close()
	return c.Put(ctx, f)
}

// Get streams object id into w.
func (c *Client) Get(ctx context.Context, id string, w io.Writer) error {
	resp, err := c.send(ctx, http.MethodGet, "/v1/objects/"+url.PathEscape(id), nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

// GetBytes returns object id whole.
func (c *Client) GetBytes(ctx context.Context, id string) ([]byte, error) {
	var buf bytes.Buffer
	err := c.Get(ctx, id, &buf)
	return buf.Bytes(), err
}

// Objects lists stored objects.
func (c *Client) Objects(ctx context.Context) ([]api.Object, error) {
	var out []api.Object
	return out, c.doJSON(ctx, http.MethodGet, "/v1/objects", nil, &out)
}

// Operations lists the operations catalogue.
func (c *Client) Operations(ctx context.Context) ([]api.Operation, error) {
	var out []api.Operation
	return out, c.doJSON(ctx, http.MethodGet, "/v1/operations", nil, &out)
}

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

// Workers lists registered workers.
func (c *Client) Workers(ctx context.Context) ([]api.Worker, error) {
	var out []api.Worker
	return out, c.doJSON(ctx, http.MethodGet, "/v1/workers", nil, &out)
}

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
