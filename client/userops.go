package client

import (
	"context"
	"io"
	"net/http"
	"net/url"

	"github.com/braidhq/braid/api"
)

// maxModule is the largest module a server serves (userop.MaxModule).
const maxModule = 64 << 20

// AddOperation registers a user operation whose module is already stored
// (Put). Registering a name again makes a new version, unless the
// current one is the same (then the current one is returned).
func (c *Client) AddOperation(ctx context.Context, spec api.OperationSpec) (op api.Operation, err error) {
	return op, c.doJSON(ctx, http.MethodPost, "/v1/operations", spec, &op)
}

// RemoveOperation removes a user operation: no new job can use it, while
// jobs running it carry on.
func (c *Client) RemoveOperation(ctx context.Context, name string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/operations/"+url.PathEscape(name), nil, nil)
}

// Code downloads a user operation's module by digest, as a worker does;
// it needs the cluster secret (WithSecret). The caller checks the digest.
func (c *Client) Code(ctx context.Context, digest string) ([]byte, error) {
	var b []byte
	req := request{method: http.MethodGet, path: "/v1/code/" + url.PathEscape(digest)}
	err := c.call(ctx, req, func(resp *http.Response) error {
		var err error
		b, err = io.ReadAll(io.LimitReader(resp.Body, maxModule+1))
		return err
	})
	return b, err
}
