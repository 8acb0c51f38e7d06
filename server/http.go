package server

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/internal/version"
)

// maxJSONBody bounds JSON request bodies.
const maxJSONBody = 1 << 20

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/openapi.json", s.handleOpenAPI)
	mux.HandleFunc("GET /healthz", handleHealthz)
	mux.HandleFunc("POST /v1/objects", s.handlePutObject)
	mux.HandleFunc("GET /v1/objects", s.handleListObjects)
	mux.HandleFunc("GET /v1/objects/{id}", s.handleGetObject)
	mux.HandleFunc("HEAD /v1/objects/{id}", s.handleGetObject)
	mux.HandleFunc("DELETE /v1/objects/{id}", s.handleDeleteObject)
	mux.HandleFunc("GET /v1/operations", s.handleOperations)
	mux.HandleFunc("POST /v1/jobs", s.handleSubmit)
	mux.HandleFunc("GET /v1/jobs", s.handleListJobs)
	mux.HandleFunc("GET /v1/jobs/{id}", s.handleJob)
	mux.HandleFunc("DELETE /v1/jobs/{id}", s.handleDeleteJob)
	mux.HandleFunc("GET /v1/jobs/{id}/wait", s.handleWait)
	mux.HandleFunc("GET /v1/jobs/{id}/events", s.handleEvents)
	mux.HandleFunc("POST /v1/jobs/{id}/cancel", s.handleCancel)
	mux.HandleFunc("POST /v1/workers", s.workerAuth(s.handleRegister))
	mux.HandleFunc("GET /v1/workers", s.handleListWorkers)
	mux.HandleFunc("PUT /v1/workers/{name}", s.workerAuth(s.handleRegister))
	mux.HandleFunc("POST /v1/workers/{name}/heartbeat", s.workerAuth(s.handleHeartbeat))
	mux.HandleFunc("POST /v1/workers/{name}/refresh", s.workerAuth(s.handleRefresh))
	mux.HandleFunc("DELETE /v1/workers/{name}", s.workerAuth(s.handleDeregister))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: 404, code: "not_found",
			msg: fmt.Sprintf("no such endpoint: %s %s (see /v1/openapi.json)", r.Method, r.URL.Path)})
	})
	return mux
}

// handleHealthz says the server is up, and which braid it is.
func handleHealthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, 200, map[string]string{"status": "ok", "version": version.String()})
}

// workerAuth admits only callers that show the worker token derived from the
// cluster secret: without it anyone who can reach the server could register
// a fake worker or deregister a real one.
func (s *Server) workerAuth(h http.HandlerFunc) http.HandlerFunc {
	want := []byte(api.WorkerToken(s.cfg.Secret))
	return func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get(api.WorkerTokenHeader))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			writeError(w, &apiError{status: http.StatusUnauthorized, code: api.CodeUnauthorized,
				msg: "changing the worker registry needs the worker token (" + api.WorkerTokenHeader +
					"), which workers derive from the cluster secret: start the worker with the server's --secret"})
			return
		}
		h(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// writeError sends the JSON error body; unknown errors are 500s.
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{status: 500, code: "internal", msg: err.Error()}
		if errors.Is(err, ErrServerClosed) {
			ae.status, ae.code = 503, "unavailable"
		}
		if errors.Is(err, errConflict) {
			ae.status, ae.code = 409, "conflict"
		}
	}
	writeJSON(w, ae.status, map[string]any{"error": map[string]string{"code": ae.code, "message": ae.msg}})
}

// readJSON decodes one JSON object into v, strictly: unknown fields,
// trailing data and bodies over maxJSONBody are errors.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return badRequest("bad_request", "Content-Type is %q; send application/json", ct)
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxJSONBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{status: 413, code: "too_large", msg: fmt.Sprintf("request body over %d bytes", maxJSONBody)}
		}
		return badRequest("malformed_json", "request body is not valid JSON for this endpoint: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("malformed_json", "request body has data after the JSON object")
	}
	return nil
}
