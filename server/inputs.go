package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/server/statedb"
	"github.com/braidhq/braid/store"
)

// maxListLine is the longest line an input list may have: an id and some
// spaces.
const maxListLine = 1024

// splitInputs builds a job of one unit per input object (JobSpec.Inputs
// or InputList). The inputs stay on disk: a unit's input is read when the
// unit is sent, so a job of 10,000 objects holds 32 bytes of each in
// memory. Every input must exist and fit a unit; each is touched, so the
// collector leaves it alone while the job runs.
func (s *Server) splitInputs(id string, spec api.JobSpec, setup unitSetup, header int, received time.Time) (*jobRun, error) {
	ids, err := s.inputIDs(spec)
	if err != nil {
		return nil, err
	}
	limit := maxInputFor(header)
	inputs := make([][32]byte, len(ids))
	sizes := make([]int64, len(ids))
	infos, bad, err := s.touchAll(ids)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, &apiError{status: 404, code: api.CodeNoObject, msg: fmt.Sprintf("input %d, object %s, does not exist; upload it with `braid put`", bad, ids[bad])}
	case err != nil:
		return nil, err
	}
	for i, in := range ids {
		if size := infos[i].Size; size > limit {
			return nil, badRequest(api.CodeTooLarge, "input %d, object %s, is %d bytes: a unit's input and its %d-byte header must fit one data-plane message (%d bytes)",
				i, in, size, header, limit+int64(header))
		}
		inputs[i], sizes[i] = statedb.ParseID(in), infos[i].Size
	}
	j := newJobRun(id, spec, len(ids), received)
	j.params, j.digest, j.inputs, j.inputSizes = setup.params, setup.digest, inputs, sizes
	return j, nil
}

// inputIDs are a job's input objects: JobSpec.Inputs, or the ids its
// InputList object lists.
func (s *Server) inputIDs(spec api.JobSpec) ([]string, error) {
	if spec.InputList == "" {
		return spec.Inputs, nil
	}
	list, err := store.ReadAll(s.ctx, s.store, spec.InputList, MaxUnits*maxListLine)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, &apiError{status: 404, code: api.CodeNoObject, msg: fmt.Sprintf("input list %s does not exist; upload it with `braid put`", spec.InputList)}
	case errors.Is(err, store.ErrTooLarge):
		return nil, badRequest(api.CodeTooLarge, "input list %s is over %d bytes", spec.InputList, MaxUnits*maxListLine)
	case err != nil:
		return nil, err
	}
	return parseInputList(list)
}

// parseInputList reads one object id per line; blank lines and lines
// starting with # are skipped.
func parseInputList(list []byte) ([]string, error) {
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(list))
	sc.Buffer(nil, maxListLine)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case !store.ValidID(line):
			return nil, badRequest(api.CodeBadRequest, "input list line %d: %.80q is not an object id (64 lowercase hex digits)", n, line)
		case len(ids) == MaxUnits:
			return nil, badRequest(api.CodeTooLarge, "the input list names more than %d objects", MaxUnits)
		}
		ids = append(ids, line)
	}
	if err := sc.Err(); err != nil {
		return nil, badRequest(api.CodeBadRequest, "reading the input list: %v (a line is at most %d bytes)", err, maxListLine)
	}
	if len(ids) == 0 {
		return nil, badRequest(api.CodeBadRequest, "the input list names no object")
	}
	return ids, nil
}
