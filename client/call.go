package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/braidhq/braid/api"
)

// request is one API call, which the client makes as often as its Retry
// policy allows.
type request struct {
	method, path string
	ctype        string // Content-Type of body
	body         body   // nil for none
}

// body is what a request sends. A repeated call sends it again.
type body interface {
	// open returns the body for the next attempt and its length, or -1 if
	// the length is unknown.
	open() (io.Reader, int64, error)
	// replayable reports whether open can give the body once more.
	replayable() bool
}

// jsonBody is a body held in memory.
type jsonBody []byte

func (b jsonBody) open() (io.Reader, int64, error) { return bytes.NewReader(b), int64(len(b)), nil }
func (b jsonBody) replayable() bool                { return true }

// call makes req until an attempt succeeds or the Retry policy gives up,
// and hands each 2xx answer to read, which consumes what it needs of the
// body (call closes it). An error from read counts as the attempt's: a GET
// whose answer broke off is made again, unless read wrapped the error with
// final.
func (c *Client) call(ctx context.Context, req request, read func(*http.Response) error) error {
	o := outage{policy: c.retry}
	repeatable := req.method == http.MethodGet || req.method == http.MethodHead
	for {
		err := c.attempt(ctx, req, read, &o)
		if err == nil {
			return nil
		}
		var f *finalError
		if errors.As(err, &f) {
			return f.err
		}
		if req.body != nil && !req.body.replayable() {
			return err
		}
		if err := o.failed(ctx, err, repeatable); err != nil {
			return err
		}
	}
}

// attempt makes one attempt at req.
func (c *Client) attempt(ctx context.Context, req request, read func(*http.Response) error, o *outage) error {
	resp, err := c.send(ctx, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if !isUnavailable(resp.StatusCode) {
		o.answered()
	}
	if err := checkStatus(resp); err != nil {
		return err
	}
	return read(resp)
}

// send sends req once and returns the server's answer, whatever its status.
func (c *Client) send(ctx context.Context, req request) (*http.Response, error) {
	var r io.Reader
	n := int64(-1)
	if req.body != nil {
		var err error
		if r, n, err = req.body.open(); err != nil {
			return nil, final(err)
		}
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, c.base+req.path, r)
	if err != nil {
		return nil, final(err)
	}
	if n > 0 {
		hr.ContentLength = n
	}
	if req.ctype != "" {
		hr.Header.Set("Content-Type", req.ctype)
	}
	if c.workerToken != "" {
		hr.Header.Set(api.WorkerTokenHeader, c.workerToken)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("braid server %s: %w", c.base, err)
	}
	return resp, nil
}

// checkStatus turns a non-2xx response into an *api.Error; a 502, 503 or
// 504 into an *unavailableError that wraps one.
func checkStatus(resp *http.Response) error {
	if resp.StatusCode/100 == 2 {
		return nil
	}
	var eb api.ErrorBody
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	ae := &eb.Error
	if json.Unmarshal(b, &eb) != nil || eb.Error.Code == "" {
		ae = &api.Error{Code: fmt.Sprintf("http_%d", resp.StatusCode), Message: strings.TrimSpace(string(b))}
	}
	if isUnavailable(resp.StatusCode) {
		return &unavailableError{err: ae, status: resp.StatusCode}
	}
	return ae
}

// do makes a call and decodes a JSON answer into out (if non-nil).
func (c *Client) do(ctx context.Context, req request, out any) error {
	return c.call(ctx, req, func(resp *http.Response) error {
		if out == nil {
			return nil
		}
		return json.NewDecoder(resp.Body).Decode(out)
	})
}

// doJSON makes a call with in (if non-nil) as its JSON body and decodes the
// JSON answer into out (if non-nil).
func (c *Client) doJSON(ctx context.Context, method, path string, in, out any) error {
	req := request{method: method, path: path}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		req.body, req.ctype = jsonBody(b), "application/json"
	}
	return c.do(ctx, req, out)
}

// finalError carries an error that ends a call however transient it looks:
// a download that already wrote part of its output, a body that cannot be
// opened.
type finalError struct{ err error }

func (e *finalError) Error() string { return e.err.Error() }
func (e *finalError) Unwrap() error { return e.err }

func final(err error) error { return &finalError{err: err} }
