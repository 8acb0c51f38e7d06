package client_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
)

// deleteAPI answers DELETE /v1/jobs/{id} and /v1/objects/{id} as the server
// does: 204 for "gone", 404 for an unknown id, 409 for "busy".
func deleteAPI(t *testing.T) (*client.Client, func() []string) {
	var mu sync.Mutex
	var got []string
	answer := func(notFound string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, r.Method+" "+r.URL.Path)
			mu.Unlock()
			switch r.PathValue("id") {
			case "gone":
				w.WriteHeader(http.StatusNoContent)
			case "busy":
				writeJSON(w, 409, api.ErrorBody{Error: api.Error{Code: api.CodeConflict, Message: "still running: cancel it first"}})
			default:
				writeJSON(w, 404, api.ErrorBody{Error: api.Error{Code: notFound, Message: "no such thing"}})
			}
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("DELETE /v1/jobs/{id}", answer(api.CodeNotFound))
	mux.HandleFunc("DELETE /v1/objects/{id}", answer(api.CodeNoObject))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return client.New(srv.URL), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

func TestDelete(t *testing.T) {
	c, requests := deleteAPI(t)
	ctx := testCtx(t)
	cases := []struct {
		name, id string
		del      func(string) error
		want     string // error code; "" for success
		path     string
	}{
		{"job", "gone", func(id string) error { return c.DeleteJob(ctx, id) }, "", "DELETE /v1/jobs/gone"},
		{"unknown job", "nope", func(id string) error { return c.DeleteJob(ctx, id) }, api.CodeNotFound, "DELETE /v1/jobs/nope"},
		{"running job", "busy", func(id string) error { return c.DeleteJob(ctx, id) }, api.CodeConflict, "DELETE /v1/jobs/busy"},
		{"object", "gone", func(id string) error { return c.DeleteObject(ctx, id) }, "", "DELETE /v1/objects/gone"},
		{"unknown object", "nope", func(id string) error { return c.DeleteObject(ctx, id) }, api.CodeNoObject, "DELETE /v1/objects/nope"},
		{"object in use", "busy", func(id string) error { return c.DeleteObject(ctx, id) }, api.CodeConflict, "DELETE /v1/objects/busy"},
	}
	for _, tc := range cases {
		before := len(requests())
		err := tc.del(tc.id)
		var ae *api.Error
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.As(err, &ae) || ae.Code != tc.want):
			t.Errorf("%s: %v, want code %s", tc.name, err, tc.want)
		}
		if got := requests()[before:]; len(got) != 1 || got[0] != tc.path {
			t.Errorf("%s: requests %q, want one %s", tc.name, got, tc.path)
		}
	}
}
