package client

import (
	"crypto/tls"
	"net/http"
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
	token       string // the bearer token sent with every call
	workerToken string // sent with worker-registry calls
	retry       Retry
}

// New returns a client for the server at base (e.g. http://127.0.0.1:7070).
// An empty base means $BRAID_SERVER, else DefaultServer. It sends the token
// in $BRAID_TOKEN, if set (see WithToken). Its calls ride through a server
// that cannot be reached for up to DefaultRetryFor (see Retry and
// WithRetry).
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
	return &Client{base: strings.TrimRight(base, "/"), http: &http.Client{Transport: defaultTransport}, token: os.Getenv("BRAID_TOKEN")}
}

// maxIdlePerHost is how many idle connections to one server a client
// keeps (net/http's default is 2): concurrent calls then reuse
// connections instead of opening new ones, each a TLS handshake over
// HTTPS. BenchmarkControlPlane (server) measures it.
const maxIdlePerHost = 64

// defaultTransport is New's: net/http's default with maxIdlePerHost.
var defaultTransport = newTransport()

func newTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = maxIdlePerHost
	return tr
}

// WithToken returns a copy of c that sends token (braid token create makes
// one) as its bearer token; "" sends none. A server that checks tokens
// refuses calls without one with api.CodeUnauthorized, and calls beyond the
// token's role with api.CodeForbidden.
func (c *Client) WithToken(token string) *Client {
	cp := *c
	cp.token = strings.TrimSpace(token)
	return &cp
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

// WithTLS returns a copy of c that checks the server's certificate with cfg
// (TLSConfig builds one from a CA file or a pinned fingerprint); nil
// keeps the system's roots. It replaces the transport of the HTTP client
// (keeping its timeout): call it after WithHTTPClient.
func (c *Client) WithTLS(cfg *tls.Config) *Client {
	cp := *c
	if cfg == nil {
		return &cp
	}
	tr := newTransport()
	tr.TLSClientConfig = cfg.Clone() // net/http adds to its NextProtos
	hc := *c.http
	hc.Transport = tr
	cp.http = &hc
	return &cp
}

// WithRetry returns a copy of c that rides through an unreachable server
// as r says (see Retry). New's client has the zero Retry: it retries for up
// to DefaultRetryFor. WithRetry(Retry{For: -1}) turns retrying off, for
// callers that have a retry loop of their own.
func (c *Client) WithRetry(r Retry) *Client {
	cp := *c
	cp.retry = r
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
