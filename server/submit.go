package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"maps"
	"slices"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/scheduler"
	"github.com/braidhq/braid/store"
	"github.com/braidhq/braid/transport"
)

// MaxUnits bounds the units one job may have.
const MaxUnits = 100_000

// maxUnitInput is the most a unit's input (or output) can be.
const maxUnitInput = transport.MaxMessageSize

// apiError is an error with an HTTP status and a stable code.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(code, format string, args ...any) *apiError {
	return &apiError{status: 400, code: code, msg: fmt.Sprintf(format, args...)}
}

// validateSpec checks everything about a spec that needs no object bytes,
// filling in defaults.
func validateSpec(spec *api.JobSpec) error {
	op, ok := ops.Lookup(spec.Op)
	if !ok {
		names := []string{}
		for _, info := range ops.Catalogue() {
			names = append(names, info.Name)
		}
		return badRequest(api.CodeUnknownOp, "unknown operation %q; available: %v", spec.Op, names)
	}
	extra := 0
	if spec.Tiles != "" && spec.Params["format"] == "" {
		extra = 1 // tiles travel as png
	}
	if err := checkParams(spec.Params, extra); err != nil {
		return err
	}
	if !store.ValidID(spec.Input) {
		return badRequest(api.CodeBadRequest, "input %q is not an object id (64 lowercase hex digits, as `braid put` prints)", spec.Input)
	}
	if err := op.Validate(ops.Params(spec.Params)); err != nil {
		return badRequest(api.CodeBadParameter, "%v", err)
	}
	if spec.Repeat < 0 || spec.Repeat > MaxUnits {
		return badRequest(api.CodeBadParameter, "repeat %d: want 1 to %d (or leave it out for one unit)", spec.Repeat, MaxUnits)
	}
	if spec.Repeat > 0 && spec.Tiles != "" {
		return badRequest(api.CodeBadRequest, "give repeat or tiles, not both")
	}
	if spec.Tiles != "" {
		if _, _, err := parseTiles(spec.Tiles); err != nil {
			return badRequest(api.CodeBadParameter, "%v", err)
		}
		if _, err := op.Reach(ops.Params(spec.Params)); err != nil {
			return badRequest(api.CodeBadParameter, "operation %s cannot be tiled: %v", spec.Op, err)
		}
	}
	if spec.Policy == "" {
		spec.Policy = "dynamic"
	}
	if !slices.Contains(scheduler.PolicyNames, spec.Policy) {
		return badRequest(api.CodeBadParameter, "unknown policy %q; available: %v", spec.Policy, scheduler.PolicyNames)
	}
	return nil
}

// split builds a job's units from its spec and input object. Every unit
// fits one data-plane message with its header, or split fails with 400.
func (s *Server) split(id string, spec api.JobSpec, received time.Time) (*jobRun, error) {
	params := unitParams(spec)
	header, err := unitHeaderLen(id, spec.Op, params)
	if err != nil {
		return nil, err
	}
	input, err := s.store.ReadAll(spec.Input, maxInputFor(header))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, &apiError{status: 404, code: api.CodeNoObject, msg: fmt.Sprintf("input object %s does not exist; upload it with `braid put`", spec.Input)}
	case errors.Is(err, store.ErrTooLarge):
		return nil, badRequest(api.CodeTooLarge, "%v (a unit's input and its %d-byte header must fit one %d-byte data-plane message)",
			err, header, transport.MaxMessageSize)
	case err != nil:
		return nil, err
	}
	if spec.Tiles == "" {
		n := max(spec.Repeat, 1)
		j := newJobRun(id, spec, n, received)
		j.params, j.inputs = params, make([][]byte, n)
		for i := range j.inputs {
			j.inputs[i] = input
		}
		return j, nil
	}
	return s.splitTiles(id, spec, input, params, header, received)
}

// unitParams are the parameters every unit of spec carries: tiles travel
// losslessly as png, and Stitch encodes the final format.
func unitParams(spec api.JobSpec) ops.Params {
	params := maps.Clone(ops.Params(spec.Params))
	if spec.Tiles != "" {
		if params == nil {
			params = ops.Params{}
		}
		params["format"] = "png"
	}
	return params
}

func (s *Server) splitTiles(id string, spec api.JobSpec, input []byte, params ops.Params, header int, received time.Time) (*jobRun, error) {
	rows, cols, _ := parseTiles(spec.Tiles)
	op, _ := ops.Lookup(spec.Op)
	halo, err := op.Reach(ops.Params(spec.Params))
	if err != nil {
		return nil, badRequest(api.CodeBadParameter, "%v", err)
	}
	tiles, format, bounds, err := ops.SplitTiles(input, rows, cols, halo)
	if err != nil {
		if errors.Is(err, ops.ErrBadImage) {
			return nil, badRequest(api.CodeBadImage, "input %s: %v", spec.Input, err)
		}
		return nil, badRequest(api.CodeBadParameter, "%v", err)
	}
	if f := spec.Params["format"]; f != "" {
		format = f
	}
	j := newJobRun(id, spec, len(tiles), received)
	j.params, j.tiles, j.format, j.bounds = params, tiles, format, bounds
	j.inputs = make([][]byte, len(tiles))
	for i, t := range tiles {
		if err := checkUnitFits(fmt.Sprintf("tile %d", i), header, len(t.Data)); err != nil {
			return nil, err
		}
		j.inputs[i] = t.Data
	}
	return j, nil
}

func newJobID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "j-" + hex.EncodeToString(b[:])
}

// submit validates, splits and queues a job.
func (s *Server) submit(ctx context.Context, spec api.JobSpec) (*jobRun, error) {
	if err := validateSpec(&spec); err != nil {
		return nil, err
	}
	j, err := s.split(newJobID(), spec, time.Now())
	if err != nil {
		return nil, err
	}
	if err := s.enqueue(ctx, j); err != nil {
		return nil, err
	}
	s.log.Info("job submitted", "job", j.id, "op", spec.Op, "units", len(j.inputs), "policy", spec.Policy)
	return j, nil
}

func (s *Server) enqueue(ctx context.Context, j *jobRun) error {
	s.jobsMu.Lock()
	s.jobs[j.id] = j
	s.jobsMu.Unlock()
	var err error
	if derr := s.disp.do(ctx, func() { err = s.disp.addJob(j) }); derr != nil {
		err = derr
	}
	if err != nil {
		s.jobsMu.Lock()
		delete(s.jobs, j.id)
		s.jobsMu.Unlock()
	}
	return err
}

// assembly is what assembling a job's result needs, copied on the dispatch
// loop so that the assembling goroutine shares nothing with it.
type assembly struct {
	tiles  []ops.Tile
	format string
	bounds image.Rectangle
}

// assemble builds a finished job's result object.
func (s *Server) assemble(j *jobRun, a assembly) (string, error) {
	j.mu.Lock()
	units := append([]api.UnitStat(nil), j.units...)
	j.mu.Unlock()
	switch {
	case a.tiles != nil:
		outs := make([][]byte, len(units))
		for i, u := range units {
			b, err := s.store.ReadAll(u.Output, maxUnitInput)
			if err != nil {
				return "", fmt.Errorf("tile %d: %w", i, err)
			}
			outs[i] = b
		}
		img, err := ops.Stitch(a.tiles, outs, a.format, a.bounds)
		if err != nil {
			return "", err
		}
		info, err := s.store.PutBytes(img)
		return info.ID, err
	case len(units) == 1 && j.spec.Repeat == 0:
		return units[0].Output, nil
	}
	m := api.Manifest{Job: j.id, Op: j.spec.Op, Input: j.spec.Input, Units: make([]api.ManifestUnit, len(units))}
	for i, u := range units {
		m.Units[i] = api.ManifestUnit{Index: i, Output: u.Output}
		if info, err := s.store.Stat(u.Output); err == nil {
			m.Units[i].Size = info.Size
		}
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return "", err
	}
	info, err := s.store.Put(bytes.NewReader(b))
	return info.ID, err
}

// resume reloads job records: finished jobs are served as they were,
// unfinished ones are split again and rerun.
func (s *Server) resume() error {
	recs, err := s.db.loadJobs()
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if rec.Terminal() {
			s.restore(rec)
			continue
		}
		j, err := s.split(rec.ID, rec.Spec, rec.ReceivedAt)
		if err == nil {
			err = s.enqueue(s.ctx, j)
		}
		if err != nil {
			rec.State, rec.Error = api.JobFailed, "could not resume after a server restart: "+err.Error()
			s.restore(rec)
			s.db.saveJob(rec)
			continue
		}
		s.log.Info("resumed unfinished job", "job", rec.ID, "units", len(j.inputs))
	}
	return nil
}

// restore installs a finished job read from the database.
func (s *Server) restore(rec api.Job) {
	j := newJobRun(rec.ID, rec.Spec, 0, rec.ReceivedAt)
	j.state, j.errText, j.result, j.units, j.progress = rec.State, rec.Error, rec.Result, rec.Units, rec.Progress
	if rec.FinishedAt != nil {
		j.finishedAt = *rec.FinishedAt
	}
	for _, u := range rec.Units {
		if u.Returned != nil && u.Returned.After(j.lastResult) {
			j.lastResult = *u.Returned
		}
	}
	s.jobsMu.Lock()
	s.jobs[j.id] = j
	s.jobsMu.Unlock()
}
