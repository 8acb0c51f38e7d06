package server

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/store"
)

// ErrImportRefused is what Config.Import wraps to refuse a URL it will not
// read for clients (a bucket the operator did not allow): 403.
var ErrImportRefused = errors.New("server: import refused")

// importRE is what ?from= may be, as the OpenAPI document says:
// s3://BUCKET/KEY, both there.
var importRE = regexp.MustCompile(`^s3://[^/]+/.+$`)

// handleImport stores an object the server reads from a URL
// (POST /v1/objects?from=s3://BUCKET/KEY): the client sends no bytes, and
// the server reads the object once, hashing it on the way into the store.
// The object is then the caller's upload, as if it had sent the bytes.
func (s *Server) handleImport(w http.ResponseWriter, r *http.Request, from string) {
	if !importRE.MatchString(from) {
		writeError(w, badRequest(api.CodeBadRequest, "from=%q: want s3://BUCKET/KEY", from))
		return
	}
	if s.cfg.Import == nil {
		writeError(w, badRequest(api.CodeBadRequest, "this server cannot read %s: it has no S3 access configured", from))
		return
	}
	rc, size, err := s.cfg.Import(r.Context(), from)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, &apiError{status: http.StatusNotFound, code: api.CodeNoObject, msg: err.Error()})
		return
	case errors.Is(err, ErrImportRefused):
		writeError(w, &apiError{status: http.StatusForbidden, code: api.CodeForbidden, msg: err.Error()})
		return
	case errors.Is(err, store.ErrUnavailable):
		writeError(w, err)
		return
	case err != nil:
		writeError(w, badRequest(api.CodeBadRequest, "reading %s: %v", from, err))
		return
	}
	defer rc.Close()
	if size > s.store.MaxSize() {
		writeError(w, s.tooLarge(size, 0))
		return
	}
	info, err := s.store.Put(r.Context(), rc)
	if err != nil {
		writeError(w, fmt.Errorf("importing %s: %w", from, err))
		return
	}
	s.log.Info("imported an object", "from", from, "object", info.ID, "size", info.Size, "existing", info.Existing)
	s.recordUpload(w, r, info)
}
