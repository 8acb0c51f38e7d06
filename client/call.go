package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/version"
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
	if err := checkStatus(c.base, resp); err != nil {
		return wrongPath(c.base, err)
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
	hr.Header.Set("User-Agent", userAgent)
	if c.token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.workerToken != "" {
		hr.Header.Set(api.WorkerTokenHeader, c.workerToken)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		if plainHTTPAnswer(err) {
			return nil, final(wrongScheme(c.base, "http", err))
		}
		if untrusted(err) {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // the method and URL are said once
			}
			return nil, final(&UntrustedError{URL: c.base, Err: err})
		}
		if dialFailed(err) {
			return nil, &NoServerError{URL: c.base, Err: err}
		}
		return nil, fmt.Errorf("braid server %s: %w", c.base, err)
	}
	return resp, nil
}

// userAgent names this client and its version in every request.
var userAgent = "braid/" + version.String()

// checkStatus turns a non-2xx response from the server at base into an
// *api.Error, or a *NotBraidError if braid did not write it; a 502, 503 or
// 504 into an *unavailableError that wraps one.
func checkStatus(base string, resp *http.Response) error {
	if resp.StatusCode/100 == 2 {
		return nil
	}
	var eb api.ErrorBody
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var err error = &eb.Error
	if json.Unmarshal(b, &eb) != nil || eb.Error.Code == "" {
		nb := notBraid(base, resp, b)
		if nb.HTTPSOnly() {
			return wrongScheme(base, "https", nb)
		}
		err = nb
	} else {
		// Say the code once: the server's message may start with it too.
		eb.Error.Message = strings.TrimPrefix(eb.Error.Message, eb.Error.Code+": ")
	}
	if isUnavailable(resp.StatusCode) {
		return &unavailableError{err: err, status: resp.StatusCode}
	}
	return err
}

// NotBraidError is an answer without braid's JSON error body: another
// HTTP server, or a proxy, answered.
type NotBraidError struct {
	URL        string
	Status     string // "404 Not Found"
	StatusCode int    // 404
	// Text is the body if it was one short line of plain text; a page of
	// HTML is never kept.
	Text string
}

func (e *NotBraidError) Error() string {
	if e.Text != "" {
		return fmt.Sprintf("%s answered %s (%s); is it a braid server?", e.URL, e.Status, e.Text)
	}
	return fmt.Sprintf("%s answered %s; is it a braid server?", e.URL, e.Status)
}

// HTTPSOnly reports whether the answer is Go's to plain HTTP sent to an
// HTTPS server.
func (e *NotBraidError) HTTPSOnly() bool {
	return e.StatusCode == http.StatusBadRequest && strings.Contains(e.Text, "HTTP request to an HTTPS server")
}

func notBraid(base string, resp *http.Response, body []byte) *NotBraidError {
	e := &NotBraidError{URL: base, Status: resp.Status, StatusCode: resp.StatusCode}
	text := strings.TrimSpace(string(body))
	ct := resp.Header.Get("Content-Type")
	if (ct == "" || strings.HasPrefix(ct, "text/plain")) && len(text) <= 100 && !strings.Contains(text, "\n") {
		e.Text = text
	}
	return e
}

// do makes a call and decodes a JSON answer into out (if non-nil).
func (c *Client) do(ctx context.Context, req request, out any) error {
	return c.call(ctx, req, func(resp *http.Response) error {
		if out == nil {
			return nil
		}
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				return final(&NotBraidError{URL: c.base, Status: resp.Status + " with " + ct + ", not JSON", StatusCode: resp.StatusCode})
			}
			return err
		}
		return nil
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

// NoServerError is a call that could not connect to the server: nothing
// listens at the URL, or its host name does not resolve. A Client retries
// such a call under its Retry policy (a server may be restarting), so the
// error comes back once the policy or the context gave up.
type NoServerError struct {
	URL string
	Err error // the dial error
}

func (e *NoServerError) Error() string {
	return fmt.Sprintf("no braid server at %s (%s)", e.URL, DialReason(e.Err))
}

func (e *NoServerError) Unwrap() error { return e.Err }

// dialFailed reports whether err is a failure to connect.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// DialReason says in a few words why a connection could not be made:
// "connection refused", "no such host".
func DialReason(err error) string {
	var errno syscall.Errno
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns):
		return dns.Err
	case errors.As(err, &errno):
		return errno.Error()
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Err.Error()
	}
	return err.Error()
}
