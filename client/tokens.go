package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/braidhq/braid/api"
)

// CreateToken makes a token (an admin's call). The answer's Token field is
// the secret: the server keeps only a hash of it, so it cannot be shown
// again.
func (c *Client) CreateToken(ctx context.Context, spec api.TokenSpec) (api.Token, error) {
	var t api.Token
	return t, c.doJSON(ctx, http.MethodPost, "/v1/tokens", spec, &t)
}

// Tokens lists the server's tokens, without their secrets (an admin's
// call).
func (c *Client) Tokens(ctx context.Context) ([]api.Token, error) {
	var ts []api.Token
	return ts, c.doJSON(ctx, http.MethodGet, "/v1/tokens", nil, &ts)
}

// RevokeToken deletes token id (an admin's call). The server refuses to
// revoke its last admin token with api.CodeConflict.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/tokens/"+url.PathEscape(id), nil, nil)
}
