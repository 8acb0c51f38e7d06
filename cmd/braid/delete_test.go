package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/braidhq/braid/api"
)

// deleteServer answers DELETEs as the server does: 204 for "gone", 409 for
// "busy", 404 for anything else.
func deleteServer(t *testing.T) string {
	mux := http.NewServeMux()
	answer := func(notFound string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			switch r.PathValue("id") {
			case "gone":
				w.WriteHeader(http.StatusNoContent)
				return
			case "busy":
				w.WriteHeader(http.StatusConflict)
				_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: api.Error{Code: api.CodeConflict, Message: "in use"}})
				return
			}
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: api.Error{Code: notFound, Message: "no such thing"}})
		}
	}
	mux.HandleFunc("DELETE /v1/objects/{id}", answer(api.CodeNoObject))
	mux.HandleFunc("DELETE /v1/jobs/{id}", answer(api.CodeNotFound))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// A failure for one argument does not stop the others; any failure is exit 1.
func TestDeleteCommand(t *testing.T) {
	url := deleteServer(t)
	code, stdout, stderr := runCmd(t, "delete", "--server", url, "nope", "gone", "busy")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if stdout != "deleted object gone\n" {
		t.Errorf("stdout %q", stdout)
	}
	for _, want := range []string{"object nope: object_not_found", "object busy: conflict: in use", "2 of 3 not deleted"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	code, stdout, _ = runCmd(t, "delete", "--job", "--server", url, "gone", "gone")
	if code != 0 || stdout != "deleted job gone\ndeleted job gone\n" {
		t.Errorf("delete --job: exit %d, stdout %q", code, stdout)
	}
	code, stdout, _ = runCmd(t, "delete", "--job", "--json", "--server", url, "gone", "nope")
	var out []deleted
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || code != 1 || len(out) != 2 ||
		out[0].Error != "" || !strings.Contains(out[1].Error, api.CodeNotFound) {
		t.Errorf("delete --json: exit %d, %v, %+v", code, err, out)
	}
	if code, _, _ := runCmd(t, "delete", "--server", url); code != 2 {
		t.Errorf("delete without arguments: exit %d, want 2", code)
	}
}
