package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/server/statedb"
	"github.com/braidhq/braid/store"
)

// tooLarge is the answer to an upload over the object size limit: at once
// from its Content-Length (size), or once a chunked body (size -1) has
// passed the limit. It names the flag that sets the limit.
func (s *Server) tooLarge(size, received int64) *apiError {
	limit := s.store.MaxSize()
	ae := &apiError{status: http.StatusRequestEntityTooLarge, code: api.CodeTooLarge, warn: true,
		msg:   fmt.Sprintf("object of %d bytes is over the server's limit of %d bytes (braid server --max-object)", size, limit),
		attrs: []any{"size", size, "limit", limit}}
	if size < 0 {
		ae.msg = fmt.Sprintf("object of more than %d bytes is over the server's limit of %d bytes (braid server --max-object)", limit, limit)
		ae.attrs = []any{"received", received, "limit", limit, "chunked", true}
	}
	return ae
}

func (s *Server) handlePutObject(w http.ResponseWriter, r *http.Request) {
	if q := r.URL.Query(); q.Has("from") { // given empty, it is refused, not an upload of the body
		s.handleImport(w, r, q.Get("from"))
		return
	}
	if r.ContentLength > s.store.MaxSize() {
		writeError(w, s.tooLarge(r.ContentLength, 0))
		return
	}
	body := &idleReader{r: r.Body, rc: http.NewResponseController(w), idle: s.cfg.UploadIdleTimeout}
	info, err := s.store.Put(r.Context(), body)
	var be *bodyError
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		writeError(w, &apiError{status: http.StatusRequestTimeout, code: api.CodeTimeout,
			msg: fmt.Sprintf("upload stalled: no bytes for %v; nothing was stored", s.cfg.UploadIdleTimeout)})
		return
	case errors.As(err, &be):
		writeError(w, badRequest(api.CodeBadRequest, "upload cut short after %d bytes%s (%v); nothing was stored",
			body.n, announced(r.ContentLength), be.err))
		return
	}
	if errors.Is(err, store.ErrTooLarge) {
		writeError(w, s.tooLarge(-1, body.n))
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.recordUpload(w, r, info)
}

// recordUpload records a client's new object in state.db and answers 201.
func (s *Server) recordUpload(w http.ResponseWriter, r *http.Request, info store.Info) {
	obj := objectOf(info)
	if info.Existing {
		// Answer with the first upload's time and owner, already on disk.
		if up, ok, err := s.db.Upload(info.ID); err != nil {
			writeError(w, fmt.Errorf("reading the upload record: %w", err))
			return
		} else if ok {
			obj.Created, obj.Owner = up.At, up.Owner
			writeJSON(w, http.StatusCreated, obj)
			return
		}
	}
	// Clients' objects are never collected: say so on disk before the 201.
	// Bytes that were already stored (a job's output, say) are someone
	// else's: this upload keeps them but does not own them, so it cannot
	// delete them either.
	if !info.Existing {
		obj.Owner = callerOf(r).id
	}
	if err := s.db.Sync(statedb.PutUpload(info.ID, obj.Created, obj.Owner)); err != nil {
		writeError(w, fmt.Errorf("recording the upload: %w", err))
		return
	}
	writeJSON(w, http.StatusCreated, obj)
}

// handleDeleteObject deletes an object (204), unless a job that is not
// finished uses it as its input or produced it (409).
func (s *Server) handleDeleteObject(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !store.ValidID(id) {
		writeError(w, badRequest(api.CodeBadRequest, "%q is not an object id (64 lowercase hex digits)", id))
		return
	}
	if c := callerOf(r); c.role == api.RoleSubmit {
		if up, ok, err := s.db.Upload(id); err != nil {
			writeError(w, fmt.Errorf("reading the upload record: %w", err))
			return
		} else if !ok || up.Owner != c.id {
			if _, err := s.store.Stat(r.Context(), id); errors.Is(err, store.ErrNotFound) {
				writeError(w, &apiError{status: 404, code: api.CodeNoObject, msg: "no object " + id})
				return
			}
			writeError(w, &apiError{status: http.StatusForbidden, code: api.CodeForbidden,
				msg: fmt.Sprintf("object %s was not uploaded with token %s: only its uploader or an admin may delete it", id, c.id)})
			return
		}
	}
	s.refsMu.Lock()
	defer s.refsMu.Unlock()
	if j, how := s.activeUser(id); j != "" {
		writeError(w, conflict("object %s is %s job %s, which is not finished; cancel the job or wait for it",
			id, how, j))
		return
	}
	if _, live := s.userOps.hasCode(id); live {
		writeError(w, conflict("object %s is the module of a user operation; remove the operation first (braid op rm)", id))
		return
	}
	err := s.store.Remove(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, &apiError{status: 404, code: api.CodeNoObject, msg: "no object " + id})
		return
	}
	if err == nil {
		err = s.db.Sync(statedb.DeleteUpload(id))
	}
	if err != nil {
		writeError(w, fmt.Errorf("deleting object %s: %w", id, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// activeUser names a job that is not finished and uses object id as its
// input ("the input of") or has produced it ("an output of").
func (s *Server) activeUser(id string) (job, how string) {
	want := statedb.ParseID(id)
	s.jobsMu.RLock()
	jobs := make([]*jobRun, 0, len(s.jobs))
	for _, j := range s.jobs {
		jobs = append(jobs, j)
	}
	s.jobsMu.RUnlock()
	for _, j := range jobs {
		how, running := j.uses(id, want)
		if how == "" && running {
			if named, err := s.db.NamesOutput(j.id, want); named || err != nil {
				how = "an output of" // or, not knowing, taken for one
			}
		}
		if how != "" {
			return j.id, how
		}
	}
	return "", ""
}

// uses says how a job that is not finished uses an object, or "", from
// what it holds in memory; running says the job has units' outputs on
// disk too, which the caller looks up.
func (j *jobRun) uses(id string, want [32]byte) (how string, running bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case isTerminal(j.state):
		return "", false
	case j.spec.Input == id:
		return "the input of", false
	case j.spec.OpDigest == id || slices.Contains(j.modules, id):
		return "the operation module of", false
	case j.spec.InputList == id:
		return "the input list of", false
	case slices.Contains(j.spec.Inputs, id) || slices.Contains(j.inputs, want):
		return "an input of", false
	case j.storedResult == id:
		return "the result of", false
	case !j.runningLocked():
		return "", false
	}
	for _, out := range j.pendingOut {
		if out == want {
			return "an output of", false
		}
	}
	return "", true
}

func announced(contentLength int64) string {
	if contentLength < 0 {
		return ""
	}
	return fmt.Sprintf(" of the %d announced", contentLength)
}

// idleReader moves the connection's read deadline forward before each read,
// so a body that keeps flowing may take as long as it needs while one that
// stops fails with os.ErrDeadlineExceeded after idle. Read errors other
// than io.EOF come wrapped in a *bodyError: the client's side failed (a
// body shorter than its Content-Length, a connection closed mid-body).
type idleReader struct {
	r    io.Reader
	rc   *http.ResponseController
	idle time.Duration
	n    int64 // bytes read so far
}

func (ir *idleReader) Read(p []byte) (int, error) {
	if err := ir.rc.SetReadDeadline(time.Now().Add(ir.idle)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return 0, err
	}
	n, err := ir.r.Read(p)
	ir.n += int64(n)
	if err != nil && err != io.EOF {
		err = &bodyError{err}
	}
	return n, err
}

// bodyError is a failure to read the request body.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "reading the request body: " + e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// handleListObjects serves GET /v1/objects, by id, a page at a time
// (paging.go).
func (s *Server) handleListObjects(w http.ResponseWriter, r *http.Request) {
	p, err := readPage(r, maxPage)
	if err != nil {
		writeError(w, err)
		return
	}
	list, err := s.store.List(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	list, next := cut(list, func(o store.Info) string { return o.ID }, p)
	out := make([]api.Object, len(list))
	for i, info := range list {
		out[i] = objectOf(info)
	}
	if next != "" {
		setNext(w, r, p, next)
	}
	writeJSON(w, 200, out)
}

func (s *Server) handleGetObject(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f, info, err := s.store.Open(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrInvalidID):
		writeError(w, badRequest(api.CodeBadRequest, "%q is not an object id (64 lowercase hex digits)", id))
		return
	case errors.Is(err, store.ErrNotFound):
		writeError(w, &apiError{status: 404, code: api.CodeNoObject, msg: "no object " + id})
		return
	case err != nil:
		writeError(w, err)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(info.Size, 10))
	w.Header().Set("ETag", `"`+id+`"`)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = io.Copy(w, f)
}

// handleOperations lists the built-in operations, then the current
// version of every user operation.
func (s *Server) handleOperations(w http.ResponseWriter, _ *http.Request) {
	var out []api.Operation
	for _, info := range ops.Catalogue() {
		op := api.Operation{Name: info.Name, Summary: info.Summary, Tileable: info.Tileable, Params: []api.Parameter{}, Kind: api.OpBuiltin}
		for _, p := range info.Params {
			op.Params = append(op.Params, api.Parameter{Name: p.Name, Type: p.Type, Default: p.Default, Doc: p.Doc})
		}
		out = append(out, op)
	}
	writeJSON(w, 200, append(out, s.userOps.list()...))
}

func objectOf(info store.Info) api.Object {
	return api.Object{ID: info.ID, Size: info.Size, Created: info.Created, Existing: info.Existing}
}
