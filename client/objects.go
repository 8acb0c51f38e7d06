package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"

	"github.com/braidhq/braid/api"
)

// Put uploads r as an object; the server streams it to disk. Put reads r
// to its end and does not close it. If the connection cannot be made, Put
// tries again under the client's Retry policy as long as r can be sent
// again: nothing of it was read yet, or it is an io.Seeker (an *os.File
// on a regular file, a *bytes.Reader) that seeks back to where Put found
// it.
func (c *Client) Put(ctx context.Context, r io.Reader) (api.Object, error) {
	var o api.Object
	req := request{method: http.MethodPost, path: "/v1/objects", ctype: "application/octet-stream", body: newUpload(r)}
	return o, c.do(ctx, req, &o)
}

// Import stores the object at a URL the server reads itself,
// s3://BUCKET/KEY, with its own S3 credentials: the bytes do not pass
// through this client. The object is then the caller's upload.
func (c *Client) Import(ctx context.Context, from string) (api.Object, error) {
	var o api.Object
	req := request{method: http.MethodPost, path: "/v1/objects?from=" + url.QueryEscape(from)}
	return o, c.do(ctx, req, &o)
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

// Get streams object id into w. While nothing has been written to w, Get
// rides through a server that is away (see Retry); once some of the object
// has been written, a broken download is an error, since w holds part of
// the object.
func (c *Client) Get(ctx context.Context, id string, w io.Writer) error {
	return c.call(ctx, getObject(id), func(resp *http.Response) error {
		cw := &countingWriter{w: w}
		_, err := io.Copy(cw, resp.Body)
		if err != nil && cw.n > 0 {
			return final(err)
		}
		return err
	})
}

// GetBytes returns object id whole. It downloads the object again if the
// connection breaks on the way (see Retry).
func (c *Client) GetBytes(ctx context.Context, id string) ([]byte, error) {
	var b []byte
	err := c.call(ctx, getObject(id), func(resp *http.Response) error {
		var err error
		b, err = io.ReadAll(resp.Body)
		return err
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

func getObject(id string) request {
	return request{method: http.MethodGet, path: "/v1/objects/" + url.PathEscape(id)}
}

// Objects lists stored objects, by id.
func (c *Client) Objects(ctx context.Context) ([]api.Object, error) {
	return list[api.Object](ctx, c, "/v1/objects")
}

// countingWriter counts the bytes written to w; an error writing to w ends
// the call, since the server is not at fault.
type countingWriter struct {
	w io.Writer
	n int64
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	if err != nil {
		return n, final(err)
	}
	return n, nil
}

// DeleteObject deletes object id. The server answers an *api.Error with
// Code api.CodeNoObject if there is no such object, and api.CodeConflict
// while a job that is not finished uses it.
func (c *Client) DeleteObject(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/objects/"+url.PathEscape(id), nil, nil)
}
