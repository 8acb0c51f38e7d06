package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The server sends long lists (workers, jobs, objects, a job's units) a
// page at a time, and names the next page in a Link header
// (rel="next"); the list methods follow it to the end.

// getPage GETs path, decodes its JSON answer into out, and returns the
// path of the next page ("" after the last).
func (c *Client) getPage(ctx context.Context, path string, out any) (next string, err error) {
	err = c.call(ctx, request{method: http.MethodGet, path: path}, func(resp *http.Response) error {
		next = nextLink(resp.Header.Values("Link"))
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				return final(&NotBraidError{URL: c.base, Status: resp.Status + " with " + ct + ", not JSON", StatusCode: resp.StatusCode})
			}
			return err
		}
		return nil
	})
	if err == nil && next != "" && !strings.HasPrefix(next, "/") {
		err = fmt.Errorf("client: %s%s: next page %q is not a path on this server", c.base, path, next)
	}
	return next, err
}

// list GETs every page of the list at path.
func list[T any](ctx context.Context, c *Client, path string) ([]T, error) {
	var all []T
	for path != "" {
		var page []T
		next, err := c.getPage(ctx, path, &page)
		if err != nil {
			return all, err
		}
		all = append(all, page...)
		path = next
	}
	return all, nil
}

// nextLink finds the target of rel="next" in Link header values.
func nextLink(values []string) string {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			target, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if strings.HasPrefix(target, "<") && strings.HasSuffix(target, ">") &&
				strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
				return target[1 : len(target)-1]
			}
		}
	}
	return ""
}
