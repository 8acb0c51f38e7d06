package client

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/braidhq/braid/api"
)

// WrongURLError is a URL that reaches something, but not a braid server's
// API at its base: https:// to a server that speaks plain HTTP or the
// other way round, or a URL with a path (a page of the dashboard,
// http://HOST:7070/ui) under which the API is not. Base is the URL to
// give instead. It unwraps to what the server answered, if it answered.
type WrongURLError struct {
	URL    string // the URL given
	Reason string // what is wrong with it: "it is an HTTPS server"
	Base   string // the server's base URL, as far as can be told
	Err    error
}

func (e *WrongURLError) Error() string {
	return fmt.Sprintf("%s is not the server's base URL: %s; give the server's base URL, such as %s", e.URL, e.Reason, e.Base)
}

func (e *WrongURLError) Unwrap() error { return e.Err }

// plainHTTPAnswer reports whether err is net/http's for an HTTPS request
// that got a plain HTTP answer (it has no type of its own).
func plainHTTPAnswer(err error) bool {
	return err != nil && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// wrongScheme is the error for base, whose scheme the server does not
// speak: it speaks want ("http" or "https").
func wrongScheme(base, want string, err error) *WrongURLError {
	u := parseBase(base)
	u.Scheme = want
	return &WrongURLError{URL: base, Reason: "it is an " + strings.ToUpper(want) + " server", Base: u.String(), Err: err}
}

// wrongPath is err made a *WrongURLError if base has a path and err is an
// answer that the path names no endpoint: a 404 or 405 of an endpoint
// braid does not serve, or another server's (or the dashboard's) 404 or
// 405. A braid 404 of a job or object that does not exist is left alone:
// the path may be a proxy's prefix.
func wrongPath(base string, err error) error {
	u := parseBase(base)
	if u.Path == "" || u.Path == "/" || !noEndpoint(err) {
		return err
	}
	path := u.Path
	u.Path = ""
	return &WrongURLError{URL: base, Reason: "the API is not under " + path, Base: u.String(), Err: err}
}

// noEndpoint reports whether err is an answer that the request's path is
// not an endpoint.
func noEndpoint(err error) bool {
	var nb *NotBraidError
	if errors.As(err, &nb) {
		return nb.StatusCode == http.StatusNotFound || nb.StatusCode == http.StatusMethodNotAllowed
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Code == api.CodeMethodNotAllowed || ae.Code == api.CodeNotFound && strings.HasPrefix(ae.Message, "no such endpoint")
	}
	return false
}

// parseBase parses a base URL as New keeps it; one that does not parse is
// kept as its host.
func parseBase(base string) *url.URL {
	u, err := url.Parse(base)
	if err != nil {
		return &url.URL{Scheme: "http", Host: base}
	}
	u.RawQuery, u.Fragment = "", ""
	return u
}
