package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/version"
)

// Every request names the client and its version.
func TestUserAgent(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.UserAgent()
		_, _ = w.Write([]byte("[]"))
	}))
	defer srv.Close()
	if _, err := client.New(srv.URL).Jobs(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ua := <-got; ua != "braid/"+version.String() {
		t.Errorf("User-Agent %q, want braid/%s", ua, version.String())
	}
}

// An answer braid did not write is a *NotBraidError that keeps no HTML; a
// braid error whose message repeats its code says the code once.
func TestErrorAnswers(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/jobs/html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("<html>no</html>"))
	})
	mux.HandleFunc("/v1/jobs/plain", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "method not allowed here", http.StatusMethodNotAllowed)
	})
	mux.HandleFunc("/v1/jobs/ok-html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>welcome</html>"))
	})
	mux.HandleFunc("/v1/jobs/busy", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"error": {"code": "conflict", "message": "conflict: in use"}}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := client.New(srv.URL).WithRetry(client.Retry{For: -1})
	cases := map[string]string{
		"html":    srv.URL + " answered 404 Not Found; is it a braid server?",
		"plain":   srv.URL + " answered 405 Method Not Allowed (method not allowed here); is it a braid server?",
		"ok-html": srv.URL + " answered 200 OK with text/html, not JSON; is it a braid server?",
	}
	for id, want := range cases {
		_, err := c.Job(context.Background(), id, false)
		var nb *client.NotBraidError
		if !errors.As(err, &nb) || err.Error() != want {
			t.Errorf("job %s: %v; want a NotBraidError %q", id, err, want)
		}
	}
	_, err := c.Job(context.Background(), "busy", false)
	var ae *api.Error
	if !errors.As(err, &ae) || err.Error() != "conflict: in use" {
		t.Errorf("busy: %v, want conflict: in use", err)
	}
}

// A server that is not there is a *NoServerError naming the URL.
func TestNoServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	_, err = client.New(url).WithRetry(client.Retry{For: -1}).Jobs(context.Background())
	var ns *client.NoServerError
	if !errors.As(err, &ns) || err.Error() != "no braid server at "+url+" (connection refused)" {
		t.Errorf("%v, want a NoServerError", err)
	}
}
