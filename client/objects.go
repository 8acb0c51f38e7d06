package client

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"

	"github.com/braidhq/braid/api"
)

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
