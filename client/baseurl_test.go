package client_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/cluster"
)

// A URL that reaches something but not the API at a server's base (the
// wrong scheme, a dashboard page) is told apart from a server that is not
// braid, with the URL to give instead; it is not retried.
func TestWrongURL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := cluster.Start(ctx, cluster.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	base := cl.Client.URL() // http://127.0.0.1:PORT
	host := strings.TrimPrefix(base, "http://")
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake of plain HTTP fails, as it should
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	tlsHost := strings.TrimPrefix(tlsSrv.URL, "https://")

	for _, tc := range []struct {
		url, reason, base string
	}{
		{"https://" + host, "it is an HTTP server", base},
		{"http://" + tlsHost, "it is an HTTPS server", "https://" + tlsHost},
		{base + "/ui", "the API is not under /ui", base},
		{base + "/ui/", "the API is not under /ui", base},
		{base + "/braid", "the API is not under /braid", base},
	} {
		c := client.New(tc.url).WithRetry(client.Retry{For: 10 * time.Second})
		start := time.Now()
		_, err := c.Jobs(ctx)
		var wu *client.WrongURLError
		if !errors.As(err, &wu) || wu.Reason != tc.reason || wu.Base != tc.base {
			t.Errorf("%s: %v; want a WrongURLError, %q, base %s", tc.url, err, tc.reason, tc.base)
			continue
		}
		want := c.URL() + " is not the server's base URL: " + tc.reason + "; give the server's base URL, such as " + tc.base
		if err.Error() != want || !client.Rejected(err) {
			t.Errorf("%s: %q (rejected %v); want %q", tc.url, err, client.Rejected(err), want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: gave up after %v: a wrong URL is not retried", tc.url, d)
		}
	}
	// A job that is not there, under a path a proxy may put the API at,
	// is that and no more.
	_, err = client.New(base+"/ui").Job(ctx, "j-000000000000", false)
	var wu *client.WrongURLError
	if !errors.As(err, &wu) {
		t.Errorf("GET under /ui: %v; want a WrongURLError (the dashboard answers it)", err)
	}
	if _, err := cl.Client.Job(ctx, "j-000000000000", false); errors.As(err, &wu) {
		t.Errorf("a missing job at the base URL: %v", err)
	}
}
