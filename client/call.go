package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/braidhq/braid/api"
)

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
