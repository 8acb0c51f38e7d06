package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/server/statedb"
	"github.com/braidhq/braid/store"
	"github.com/braidhq/braid/userop"
)

// handleAddOp registers a user operation: POST /v1/operations. The module
// must be stored already (POST /v1/objects); the server compiles it once
// and refuses what would not run. 201 with a new version, 200 when the
// current version is the same.
func (s *Server) handleAddOp(w http.ResponseWriter, r *http.Request) {
	var spec api.OperationSpec
	if err := readJSON(w, r, &spec); err != nil {
		writeError(w, err)
		return
	}
	op, err := s.checkOp(r, &spec)
	if err != nil {
		if ae := (*apiError)(nil); errors.As(err, &ae) && ae.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "5")
		}
		writeError(w, err)
		return
	}
	if cur := s.userOps.current(op.Name); cur != nil && !callerOf(r).sees(cur.Op.Owner) {
		writeError(w, &apiError{status: http.StatusForbidden, code: api.CodeForbidden,
			msg: fmt.Sprintf("operation %s was registered with token %s: only it or an admin may register a new version", op.Name, cur.Op.Owner)})
		return
	}
	op.Owner, op.Created = callerOf(r).id, time.Now().UTC()
	rec, made, err := s.userOps.add(op, func(rec *opRecord) error { return s.db.Sync(putOp(rec)) })
	if err != nil {
		writeError(w, fmt.Errorf("saving the operation: %w", err))
		return
	}
	status := http.StatusOK
	if made {
		status = http.StatusCreated
		s.log.Info("user operation registered", "op", op.Name, "version", rec.Op.Version, "digest", op.Digest[:12], "abi", op.ABI)
	}
	w.Header().Set("Location", "/v1/operations/"+op.Name)
	writeJSON(w, status, rec.Op)
}

// checkOp checks a registration and its module, and returns the
// catalogue entry it makes (without version, owner and time).
func (s *Server) checkOp(r *http.Request, spec *api.OperationSpec) (api.Operation, error) {
	builtin := func(name string) bool { _, ok := ops.Lookup(name); return ok }
	if err := userop.CheckSpec(spec, builtin); err != nil {
		return api.Operation{}, badRequest(api.CodeBadParameter, "%v", trimErr(err, userop.ErrBadSpec))
	}
	if !store.ValidID(spec.Module) {
		return api.Operation{}, badRequest(api.CodeBadRequest, "module %q is not an object id: upload the .wasm file with `braid put` first (braid op add does both)", spec.Module)
	}
	code, err := s.readModule(r, spec)
	if err != nil {
		return api.Operation{}, err
	}
	kind := api.OpWasm
	if spec.ABI == api.ABIExec {
		kind, err = api.OpExec, userop.CheckScript(code.b)
	} else {
		err = s.checkModule(r, code, spec)
	}
	code.release()
	if ae := (*apiError)(nil); errors.As(err, &ae) {
		return api.Operation{}, err
	}
	if err != nil {
		return api.Operation{}, badRequest(api.CodeBadModule, "%v", trimErr(err, userop.ErrBadSpec))
	}
	limits := spec.Limits
	params := spec.Params
	if params == nil {
		params = []api.Parameter{}
	}
	return api.Operation{Name: spec.Name, Summary: spec.Summary, Params: params, Tileable: spec.Reach != nil,
		Kind: kind, Digest: spec.Module, ABI: spec.ABI, Interpreter: spec.Interpreter, Reach: spec.Reach, Limits: &limits}, nil
}

// module is a module's bytes, read under a hold on the check budget
// (modchecks.go) if it is WebAssembly.
type module struct {
	b []byte
	h *hold
}

func (m module) release() {
	if m.h != nil {
		m.h.release()
	}
}

// readModule reads a registration's module: a script up to
// userop.MaxScript, WebAssembly up to userop.MaxModule once the check
// budget holds what compiling a module of its size could take.
func (s *Server) readModule(r *http.Request, spec *api.OperationSpec) (module, error) {
	limit := int64(userop.MaxModule)
	if spec.ABI == api.ABIExec {
		limit = userop.MaxScript
	}
	info, err := s.store.Stat(r.Context(), spec.Module)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return module{}, &apiError{status: 404, code: api.CodeNoObject, msg: fmt.Sprintf("module object %s does not exist; upload it with `braid put`", spec.Module)}
	case err != nil:
		return module{}, err
	case info.Size > limit:
		return module{}, &apiError{status: http.StatusRequestEntityTooLarge, code: api.CodeTooLarge,
			msg: fmt.Sprintf("the module is %d bytes, over the %d a user operation may have", info.Size, limit)}
	}
	var m module
	if spec.ABI != api.ABIExec {
		if m.h, err = s.modChecks.acquire(r.Context(), callerOf(r).id, userop.CompileCostBound(info.Size)); err != nil {
			return module{}, err
		}
	}
	m.b, err = store.ReadAll(r.Context(), s.store, spec.Module, limit)
	if err != nil {
		m.release()
		return module{}, err
	}
	return m, nil
}

// checkModule compiles a module to check it, its hold on the check budget
// cut to what compiling it can take (userop.CompileCost).
func (s *Server) checkModule(r *http.Request, code module, spec *api.OperationSpec) error {
	cost, err := userop.CompileCost(code.b)
	if errors.Is(err, userop.ErrFunctionTooLarge) {
		return &apiError{status: http.StatusRequestEntityTooLarge, code: api.CodeTooLarge, msg: trimErr(err, userop.ErrBadSpec)}
	}
	if err != nil {
		return err
	}
	code.h.shrink(cost)
	return userop.Check(r.Context(), code.b, spec.ABI, spec.Limits.MemoryMiB)
}

// handleRemoveOp removes a user operation: DELETE /v1/operations/{name}.
// Jobs running it carry on with their version; no new job can use it.
func (s *Server) handleRemoveOp(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	cur := s.userOps.current(name)
	if cur == nil {
		if _, ok := ops.Lookup(name); ok {
			writeError(w, conflict("%s is a built-in operation; only user operations can be removed", name))
			return
		}
		writeError(w, &apiError{status: 404, code: api.CodeUnknownOp, msg: fmt.Sprintf("no user operation %q", name)})
		return
	}
	if c := callerOf(r); !c.sees(cur.Op.Owner) {
		writeError(w, &apiError{status: http.StatusForbidden, code: api.CodeForbidden,
			msg: fmt.Sprintf("operation %s was registered with token %s: only it or an admin may remove it", name, cur.Op.Owner)})
		return
	}
	removed, err := s.userOps.remove(name, func(recs []*opRecord) error {
		puts := make([]statedb.Change, len(recs))
		for i, rec := range recs {
			puts[i] = putOp(rec)
		}
		return s.db.Sync(statedb.Batch(puts...))
	})
	if err != nil {
		writeError(w, fmt.Errorf("removing the operation: %w", err))
		return
	}
	if removed {
		s.log.Info("user operation removed", "op", name)
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleCode serves a user operation's module to workers: GET
// /v1/code/{digest}, with the worker token. Only modules of registered
// operations are served.
func (s *Server) handleCode(w http.ResponseWriter, r *http.Request) {
	digest := r.PathValue("digest")
	if known, _ := s.userOps.hasCode(digest); !known {
		writeError(w, &apiError{status: 404, code: api.CodeNotFound, msg: fmt.Sprintf("no user operation has module %.64q", digest)})
		return
	}
	r.SetPathValue("id", digest)
	s.handleGetObject(w, r)
}

// trimErr drops a sentinel's text from the front of err's.
func trimErr(err, sentinel error) string {
	return strings.TrimPrefix(err.Error(), sentinel.Error()+": ")
}
