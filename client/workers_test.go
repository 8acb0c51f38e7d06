package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
)

// Rejected holds a refusal that cannot change for permanent, whoever
// answered: braid's 4xx errors, and another HTTP service's 4xx or 2xx
// (the URL is not a braid server). 5xx, 408, 429 and connection failures
// are worth retrying.
func TestRejected(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/html/{status}/v1/workers", func(w http.ResponseWriter, r *http.Request) {
		status, _ := strconv.Atoi(r.PathValue("status"))
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		_, _ = w.Write([]byte("<html><body><h1>nginx</h1></body></html>"))
	})
	mux.HandleFunc("/braid/{code}/{status}/v1/workers", func(w http.ResponseWriter, r *http.Request) {
		status, _ := strconv.Atoi(r.PathValue("status"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error": {"code": "` + r.PathValue("code") + `", "message": "no"}}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String()
	ln.Close()

	for _, tc := range []struct {
		base     string
		rejected bool
	}{
		{srv.URL + "/html/404", true},
		{srv.URL + "/html/405", true},
		{srv.URL + "/html/403", true},
		{srv.URL + "/html/200", true},
		{srv.URL + "/html/408", false},
		{srv.URL + "/html/429", false},
		{srv.URL + "/html/500", false},
		{srv.URL + "/html/502", false},
		{srv.URL + "/html/503", false},
		{srv.URL + "/braid/unauthorized/401", true},
		{srv.URL + "/braid/not_found/404", true},
		{srv.URL + "/braid/conflict/409", true},
		{srv.URL + "/braid/internal/500", false},
		{srv.URL + "/braid/unavailable/503", false},
		{gone, false},
	} {
		c := client.New(tc.base).WithRetry(client.Retry{For: -1})
		_, err := c.RegisterWorker(context.Background(), api.WorkerInfo{Name: "w"})
		if err == nil {
			t.Errorf("%s: no error", tc.base)
			continue
		}
		if got := client.Rejected(err); got != tc.rejected {
			t.Errorf("%s: Rejected(%v) = %v; want %v", tc.base, err, got, tc.rejected)
		}
	}
	if client.Rejected(nil) || client.Rejected(errors.New("EOF")) {
		t.Error("Rejected(nil or a plain error) = true")
	}
}
