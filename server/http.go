package server

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/store"
	"github.com/braidhq/braid/version"
)

// maxJSONBody bounds JSON request bodies.
const maxJSONBody = 1 << 20

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	read, submit, admin := api.RoleRead, api.RoleSubmit, api.RoleAdmin
	mux.HandleFunc("GET /v1/openapi.json", s.need(read, s.handleOpenAPI))
	mux.HandleFunc("GET /healthz", handleHealthz)
	mux.HandleFunc("GET /metrics", s.need(read, s.handleMetrics))
	mux.HandleFunc("POST /v1/objects", s.need(submit, s.handlePutObject))
	mux.HandleFunc("GET /v1/objects", s.need(read, s.handleListObjects))
	mux.HandleFunc("GET /v1/objects/{id}", s.need(read, s.handleGetObject))
	mux.HandleFunc("HEAD /v1/objects/{id}", s.need(read, s.handleGetObject))
	mux.HandleFunc("DELETE /v1/objects/{id}", s.need(submit, s.handleDeleteObject))
	mux.HandleFunc("GET /v1/operations", s.need(read, s.handleOperations))
	mux.HandleFunc("POST /v1/operations", s.need(submit, s.handleAddOp))
	mux.HandleFunc("DELETE /v1/operations/{name}", s.need(submit, s.handleRemoveOp))
	mux.HandleFunc("GET /v1/code/{digest}", s.workerAuth(s.handleCode))
	mux.HandleFunc("POST /v1/jobs", s.need(submit, s.handleSubmit))
	mux.HandleFunc("GET /v1/jobs", s.need(read, s.handleListJobs))
	mux.HandleFunc("GET /v1/jobs/{id}", s.need(read, s.handleJob))
	mux.HandleFunc("DELETE /v1/jobs/{id}", s.need(submit, s.handleDeleteJob))
	mux.HandleFunc("GET /v1/jobs/{id}/wait", s.need(read, s.handleWait))
	mux.HandleFunc("GET /v1/jobs/{id}/events", s.need(read, s.handleEvents))
	mux.HandleFunc("POST /v1/jobs/{id}/cancel", s.need(submit, s.handleCancel))
	mux.HandleFunc("POST /v1/tokens", s.need(admin, s.handleCreateToken))
	mux.HandleFunc("GET /v1/tokens", s.need(admin, s.handleListTokens))
	mux.HandleFunc("DELETE /v1/tokens/{id}", s.need(admin, s.handleRevokeToken))
	mux.HandleFunc("POST /v1/workers", s.workerAuth(s.handleRegister))
	mux.HandleFunc("GET /v1/workers", s.need(read, s.handleListWorkers))
	mux.HandleFunc("PUT /v1/workers/{name}", s.workerAuth(s.handleRegister))
	mux.HandleFunc("POST /v1/workers/{name}/heartbeat", s.workerAuth(s.handleHeartbeat))
	mux.HandleFunc("POST /v1/workers/{name}/refresh", s.workerAuth(s.handleRefresh))
	mux.HandleFunc("DELETE /v1/workers/{name}", s.workerOrAdmin(s.handleDeregister))
	mux.Handle("GET /ui/", uiHandler())
	mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if allow := allowedMethods(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(w, &apiError{status: http.StatusMethodNotAllowed, code: api.CodeMethodNotAllowed,
				msg: fmt.Sprintf("%s %s: this endpoint answers %s (see /v1/openapi.json)", r.Method, r.URL.Path, strings.Join(allow, ", "))})
			return
		}
		writeError(w, &apiError{status: 404, code: "not_found",
			msg: fmt.Sprintf("no such endpoint: %s %s (see /v1/openapi.json)", r.Method, r.URL.Path)})
	})
	return s.logErrors(mux)
}

// allowedMethods lists the methods mux serves r's path with, for the
// Allow header of a 405; none if it serves the path with no method (the
// catch-all "/" aside). GET routes serve HEAD as well.
func allowedMethods(mux *http.ServeMux, r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	return allow
}

// logErrors logs one line for every error answer (writeError): INFO for a
// client's mistake (4xx) and for 503 while stopping, WARN where the error
// asks for it (an upload over the size limit), ERROR for other server
// faults. Operators so see every refusal, with the message the client got.
func (s *Server) logErrors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lw := &errorRecorder{ResponseWriter: w}
		h.ServeHTTP(lw, r)
		ae := lw.err
		if ae == nil {
			return
		}
		level, what := slog.LevelInfo, "request refused"
		switch {
		case ae.warn:
			level = slog.LevelWarn
		case ae.status >= 500 && ae.status != http.StatusServiceUnavailable:
			level, what = slog.LevelError, "request failed"
		}
		args := append([]any{"method", r.Method, "path", r.URL.Path, "status", ae.status, "code", ae.code,
			"message", ae.msg, "remote", r.RemoteAddr}, ae.attrs...)
		s.log.Log(r.Context(), level, what, args...)
	})
}

// errorRecorder remembers the error writeError answered with, for
// logErrors. It passes Flush on (event streams) and ReadFrom (net/http's
// sends a file with sendfile: object downloads), and unwraps for
// http.ResponseController (read deadlines of uploads).
type errorRecorder struct {
	http.ResponseWriter
	err *apiError
}

func (lw *errorRecorder) Flush() {
	if f, ok := lw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// ReadFrom lets io.Copy(w, file) reach the inner writer's ReadFrom, which
// for net/http's response is sendfile: without it every download would be
// copied through user space.
func (lw *errorRecorder) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := lw.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(lw.ResponseWriter, r) // not lw: it would call ReadFrom again
}

func (lw *errorRecorder) Unwrap() http.ResponseWriter { return lw.ResponseWriter }

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
					"), which workers derive from the cluster secret: give the worker the server's secret (--secret-file or $BRAID_SECRET)"})
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

// writeError sends the JSON error body; unknown errors are 500s. The
// message never repeats the code (clients print "code: message").
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{status: 500, code: api.CodeInternal, msg: err.Error()}
		switch {
		case errors.Is(err, ErrServerClosed):
			ae.status, ae.code, ae.msg = 503, api.CodeUnavailable, "the server is shutting down; try again once it is back"
		case errors.Is(err, store.ErrUnavailable):
			// The message names the object store's endpoint; nothing was stored.
			ae.status, ae.code = 503, api.CodeUnavailable
			ae.msg = "the object store is unavailable, try again once it is back: " + ae.msg
		case errors.Is(err, errConflict):
			ae.status, ae.code = 409, api.CodeConflict
			ae.msg = strings.TrimPrefix(ae.msg, errConflict.Error()+": ")
		}
	}
	if lw, ok := w.(*errorRecorder); ok {
		lw.err = ae
	}
	writeJSON(w, ae.status, map[string]any{"error": map[string]string{"code": ae.code, "message": ae.msg}})
}

// readJSON decodes one JSON object into v, strictly: unknown fields,
// trailing data and bodies over maxJSONBody are errors. An integer field
// takes any JSON number with an integral value, 231.0 or 2.31e2 as well as
// 231: JSON has one number type, JSON Schema's integer is any such number,
// and Python's json module writes a float as 231.0.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return badRequest("bad_request", "Content-Type is %q; send application/json", ct)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{status: 413, code: "too_large", msg: fmt.Sprintf("request body over %d bytes", maxJSONBody)}
		}
		return badRequest("bad_request", "reading the request body: %v", err)
	}
	if err := noNulls(body); err != nil {
		return err
	}
	err = decodeStrict(body, v)
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) && strings.HasPrefix(ute.Value, "number ") {
		if norm, ok := integralNumbers(body); ok {
			err = decodeStrict(norm, v)
		}
	}
	if err != nil {
		return badRequest("malformed_json", "request body is not valid JSON for this endpoint: %v", err)
	}
	return nil
}

// noNulls refuses a JSON document that holds a null: no field of braid's
// API takes one (the OpenAPI document allows none), and Go would take a
// null for the field's zero value, as if it were not there.
func noNulls(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // not JSON: decodeStrict says what is wrong
		}
		if tok == nil {
			return badRequest(api.CodeMalformedJSON, "request body holds a null: no field takes one; leave the field out")
		}
	}
}

// decodeStrict decodes exactly one JSON value into v, refusing unknown
// fields and trailing data.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	return nil
}

// integralNumbers rewrites every number in the JSON document body that
// reads as a float64 with an integral value of at most 2^53 in magnitude
// (where float64 is exact) as a plain integer; ok is false if body is not
// JSON.
func integralNumbers(body []byte) (out []byte, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return nil, false
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				v[k] = walk(e)
			}
		case []any:
			for i, e := range v {
				v[i] = walk(e)
			}
		case json.Number:
			if f, err := v.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
				return json.Number(strconv.FormatInt(int64(f), 10))
			}
		}
		return v
	}
	out, err := json.Marshal(walk(doc))
	return out, err == nil
}
