package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/scheduler"
	"github.com/braidhq/braid/server/statedb"
	"github.com/braidhq/braid/store"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/userop"
)

// MaxUnits bounds the units of a job of many inputs (an input list, or
// another job's outputs): the server holds an object id per unit.
const MaxUnits = 100_000

// MaxRepeat bounds the units of a repeat job, which the server holds
// compactly (docs/scale.md).
const MaxRepeat = 10_000_000

// maxUnitInput is the most a unit's input (or output) can be.
const maxUnitInput = transport.MaxMessageSize

// apiError is an error with an HTTP status and a stable code. warn and
// attrs shape the server log's line about the answer (logErrors): warn
// logs it at WARN rather than INFO, attrs adds key-value pairs.
type apiError struct {
	status int
	code   string
	msg    string
	warn   bool
	attrs  []any
}

func (e *apiError) Error() string { return e.msg }

func badRequest(code, format string, args ...any) *apiError {
	return &apiError{status: 400, code: code, msg: fmt.Sprintf(format, args...)}
}

// conflict is a 409: the request clashes with the current state.
func conflict(format string, args ...any) *apiError {
	return &apiError{status: 409, code: api.CodeConflict, msg: fmt.Sprintf(format, args...)}
}

// validateSpec checks everything about a spec that needs no object bytes,
// filling in defaults, and the version of a user operation.
func (s *Server) validateSpec(spec *api.JobSpec) error {
	extra := 0
	if spec.Tiles != "" && spec.Params["format"] == "" {
		extra = 1 // tiles travel as png
	}
	if err := checkParams(spec.Params, extra); err != nil {
		return err
	}
	if err := checkSources(spec); err != nil {
		return err
	}
	reach, err := s.validateOp(spec)
	if err != nil {
		return err
	}
	if spec.Repeat < 0 || spec.Repeat > MaxRepeat {
		return badRequest(api.CodeBadParameter, "repeat %d: want 1 to %d (or leave it out for one unit)", spec.Repeat, MaxRepeat)
	}
	if spec.Repeat > 0 && spec.Tiles != "" {
		return badRequest(api.CodeBadRequest, "give repeat or tiles, not both")
	}
	if spec.Tiles != "" {
		if _, _, err := api.ParseTiles(spec.Tiles); err != nil {
			return badRequest(api.CodeBadParameter, "%v", err)
		}
		if _, err := reach(); err != nil {
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

// checkSources checks that a spec names its input objects one way.
func checkSources(spec *api.JobSpec) error {
	n := 0
	for _, given := range []bool{spec.Input != "", len(spec.Inputs) > 0, spec.InputList != "", spec.InputJob != ""} {
		if given {
			n++
		}
	}
	switch {
	case spec.Inputs != nil && len(spec.Inputs) == 0:
		return badRequest(api.CodeBadRequest, "inputs is empty: give at least one object id, or leave it out")
	case n == 0:
		return badRequest(api.CodeBadRequest, "no input: give input (an object id, as `braid put` prints), inputs (several), input_list (an object listing them) or input_job (another job, whose outputs they are)")
	case n > 1:
		return badRequest(api.CodeBadRequest, "give one of input, inputs, input_list and input_job")
	case spec.InputJob != "" && !validJobID(spec.InputJob):
		return badRequest(api.CodeBadRequest, "input_job %.40q is not a job id (j- and 12 hex digits)", spec.InputJob)
	case spec.Input != "" && !store.ValidID(spec.Input):
		return badRequest(api.CodeBadRequest, "input %q is not an object id (64 lowercase hex digits, as `braid put` prints)", spec.Input)
	case spec.InputList != "" && !store.ValidID(spec.InputList):
		return badRequest(api.CodeBadRequest, "input_list %q is not an object id: upload the list with `braid put` (braid submit --input-list does)", spec.InputList)
	case len(spec.Inputs) > api.MaxInputs:
		return badRequest(api.CodeTooLarge, "%d inputs: at most %d in a request; list more in an object and give its id as input_list", len(spec.Inputs), api.MaxInputs)
	case spec.Input == "" && (spec.Repeat > 0 || spec.Tiles != ""):
		return badRequest(api.CodeBadRequest, "repeat and tiles are for a job of one input; a job of several runs one unit per input")
	}
	for i, id := range spec.Inputs {
		if !store.ValidID(id) {
			return badRequest(api.CodeBadRequest, "inputs[%d] %q is not an object id", i, id)
		}
	}
	return checkInputNames(spec)
}

// checkInputNames checks JobSpec.InputNames: one per input, each empty or
// a file name.
func checkInputNames(spec *api.JobSpec) error {
	if spec.InputNames == nil {
		return nil
	}
	if len(spec.InputNames) != len(spec.Inputs) {
		return badRequest(api.CodeBadRequest, "%d input_names for %d inputs: give one per input (empty for none), or none", len(spec.InputNames), len(spec.Inputs))
	}
	for i, name := range spec.InputNames {
		if name != "" && !api.ValidInputName(name) {
			return badRequest(api.CodeBadParameter, "input_names[%d] %.80q: want a file name of at most %d bytes: no '/' or '\\', no leading '.', no control characters",
				i, name, api.MaxInputName)
		}
	}
	return nil
}

// validateOp checks the operation and its parameters; for a user
// operation it pins the version (OpVersion, OpDigest). It returns the
// operation's reach, for tiling.
func (s *Server) validateOp(spec *api.JobSpec) (reach func() (int, error), err error) {
	if isPipeline(spec.Op) {
		return s.validatePipeline(spec)
	}
	if op, ok := ops.Lookup(spec.Op); ok {
		if spec.OpVersion != 0 || spec.OpDigest != "" || spec.UnitTimeoutMS != 0 {
			return nil, badRequest(api.CodeBadRequest, "op_version, op_digest and unit_timeout_ms are for user operations; %s is built in", spec.Op)
		}
		if err := op.Validate(ops.Params(spec.Params)); err != nil {
			return nil, badRequest(api.CodeBadParameter, "%v", err)
		}
		return func() (int, error) { return op.Reach(ops.Params(spec.Params)) }, nil
	}
	rec, err := s.pinUserOp(spec)
	if err != nil {
		return nil, err
	}
	if _, err := userop.Values(spec.Op, rec.Op.Params, spec.Params); err != nil {
		return nil, badRequest(api.CodeBadParameter, "%v", trimErr(err, userop.ErrBadParam))
	}
	if err := userop.CheckJobTimeout(spec.UnitTimeoutMS); err != nil {
		return nil, badRequest(api.CodeBadParameter, "%v", trimErr(err, userop.ErrBadParam))
	}
	return func() (int, error) { return userReach(rec) }, nil
}

// pinUserOp finds the user operation a spec names, at the version it
// pins or the current one, and pins that.
func (s *Server) pinUserOp(spec *api.JobSpec) (*opRecord, error) {
	rec := s.userOps.current(spec.Op)
	if spec.OpVersion != 0 {
		rec = s.userOps.version(spec.Op, spec.OpVersion)
	}
	switch {
	case rec == nil && spec.OpVersion != 0 && s.userOps.current(spec.Op) != nil:
		return nil, badRequest(api.CodeUnknownOp, "operation %s has no version %d", spec.Op, spec.OpVersion)
	case rec != nil && s.userOps.removed(rec):
		return nil, badRequest(api.CodeUnknownOp, "operation %s version %d was removed: jobs that had it keep it, no new one can", spec.Op, spec.OpVersion)
	case rec == nil || spec.OpVersion != 0 && s.userOps.current(spec.Op) == nil:
		names := []string{}
		for _, info := range ops.Catalogue() {
			names = append(names, info.Name)
		}
		for _, op := range s.userOps.list() {
			names = append(names, op.Name)
		}
		return nil, badRequest(api.CodeUnknownOp, "unknown operation %q; available: %v", spec.Op, names)
	case spec.OpDigest != "" && spec.OpDigest != rec.Op.Digest:
		return nil, badRequest(api.CodeBadParameter, "op_digest: operation %s version %d has module %s, not %s", spec.Op, rec.Op.Version, rec.Op.Digest, spec.OpDigest)
	}
	spec.OpVersion, spec.OpDigest = rec.Op.Version, rec.Op.Digest
	return rec, nil
}

func userReach(rec *opRecord) (int, error) {
	if rec.Op.Reach == nil {
		return 0, fmt.Errorf("it was registered without a reach (braid op add --reach N makes it tileable)")
	}
	return *rec.Op.Reach, nil
}

// unitSetup is what every unit of a job carries besides its input: the
// parameters, and for a user operation its module's digest; and what
// splitting needs to know of the operation.
type unitSetup struct {
	params ops.Params
	digest [32]byte
	// image says the operation reads images (a built-in one, or a
	// pipeline that starts with one): the input is checked at submit.
	image bool
	reach func() (int, error)
	// modules are the object ids of its user operations' modules.
	modules []string
}

// setupUnits builds a job's unitSetup. A user operation's version is the
// one the spec pinned at submit, even if it was removed since (a resumed
// job runs the version it started with).
func (s *Server) setupUnits(spec api.JobSpec) (unitSetup, error) {
	if isPipeline(spec.Op) {
		return s.setupPipeline(spec)
	}
	if op, ok := ops.Lookup(spec.Op); ok {
		return unitSetup{params: unitParams(spec), image: true,
			reach: func() (int, error) { return op.Reach(ops.Params(spec.Params)) }}, nil
	}
	rec, inv, err := s.userInvocation(spec.Op, spec.OpVersion, spec.Params, spec.UnitTimeoutMS)
	if err != nil {
		return unitSetup{}, err
	}
	if rec.Op.Digest != spec.OpDigest {
		return unitSetup{}, badRequest(api.CodeUnknownOp, "operation %s version %d is not in the catalogue", spec.Op, spec.OpVersion)
	}
	return unitSetup{params: inv.UnitParams(), digest: statedb.ParseID(rec.Op.Digest), modules: []string{rec.Op.Digest},
		reach: func() (int, error) { return userReach(rec) }}, nil
}

// userInvocation resolves a user operation's version and a job's
// parameters for it into what its units carry.
func (s *Server) userInvocation(name string, version int, params map[string]string, timeoutMS int64) (*opRecord, userop.Invocation, error) {
	rec := s.userOps.version(name, version)
	if rec == nil {
		return nil, userop.Invocation{}, badRequest(api.CodeUnknownOp, "operation %s version %d is not in the catalogue", name, version)
	}
	values, err := userop.Values(name, rec.Op.Params, params)
	if err != nil {
		return nil, userop.Invocation{}, badRequest(api.CodeBadParameter, "%v", trimErr(err, userop.ErrBadParam))
	}
	if rec.Op.ABI == api.ABIExec {
		return rec, userop.NewExecInvocation(rec.Op.Interpreter, *rec.Op.Limits, timeoutMS, values), nil
	}
	return rec, userop.NewInvocation(rec.Op.ABI, *rec.Op.Limits, timeoutMS, values), nil
}

// split builds a job's units from its spec and input object. Every unit
// fits one data-plane message with its header, or split fails with 400.
func (s *Server) split(id string, spec api.JobSpec, received time.Time) (*jobRun, error) {
	setup, err := s.setupUnits(spec)
	if err != nil {
		return nil, err
	}
	j, err := s.splitWith(id, spec, setup, received)
	if j != nil {
		j.modules = setup.modules
	}
	return j, err
}

// splitWith is split once the units' setup is known.
func (s *Server) splitWith(id string, spec api.JobSpec, setup unitSetup, received time.Time) (*jobRun, error) {
	if spec.InputJob != "" {
		return s.splitInputJob(id, spec, setup, received)
	}
	header, err := unitHeaderLen(id, spec.Op, setup.params)
	if err != nil {
		return nil, err
	}
	if spec.Input == "" {
		return s.splitInputs(id, spec, setup, header, received)
	}
	input, err := store.ReadAll(s.ctx, s.store, spec.Input, maxInputFor(header))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, &apiError{status: 404, code: api.CodeNoObject, msg: fmt.Sprintf("input object %s does not exist; upload it with `braid put`", spec.Input)}
	case errors.Is(err, store.ErrTooLarge):
		return nil, badRequest(api.CodeTooLarge, "%v (a unit's input and its %d-byte header must fit one %d-byte data-plane message)",
			err, header, transport.MaxMessageSize)
	case err != nil:
		return nil, err
	}
	if setup.image {
		if err := ops.CheckInput(firstOp(spec.Op), input); err != nil {
			return nil, badImage(spec, err)
		}
	}
	if spec.Tiles == "" {
		j := newJobRun(id, spec, max(spec.Repeat, 1), received)
		j.params, j.digest, j.input = setup.params, setup.digest, input
		return j, nil
	}
	return s.splitTiles(id, spec, input, setup, header, received)
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

func (s *Server) splitTiles(id string, spec api.JobSpec, input []byte, setup unitSetup, header int, received time.Time) (*jobRun, error) {
	rows, cols, _ := api.ParseTiles(spec.Tiles)
	halo, err := setup.reach()
	if err != nil {
		return nil, badRequest(api.CodeBadParameter, "%v", err)
	}
	tiles, format, bounds, err := ops.SplitTiles(input, rows, cols, halo)
	if err != nil {
		if errors.Is(err, ops.ErrBadImage) {
			return nil, badImage(spec, err)
		}
		return nil, badRequest(api.CodeBadParameter, "%v", err)
	}
	if f := spec.Params["format"]; f != "" {
		format = f
	}
	for i, t := range tiles {
		if err := checkUnitFits(fmt.Sprintf("tile %d", i), header, len(t.Data)); err != nil {
			return nil, err
		}
	}
	j := newJobRun(id, spec, len(tiles), received)
	j.params, j.digest, j.tiles, j.format, j.bounds = setup.params, setup.digest, tiles, format, bounds
	return j, nil
}

// badImage is the answer to an input the operation cannot read: the same
// for every split, since split checks every input's header (ops.CheckInput)
// before cutting anything.
func badImage(spec api.JobSpec, err error) *apiError {
	reason := strings.TrimPrefix(err.Error(), ops.ErrBadImage.Error()+": ")
	return badRequest(api.CodeBadImage, "input %s cannot be read by %s: %s", spec.Input, spec.Op, reason)
}

func newJobID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "j-" + hex.EncodeToString(b[:])
}

// errDraining answers submits while the server stops.
var errDraining = &apiError{status: 503, code: api.CodeUnavailable,
	msg: "the server is shutting down and takes no new jobs; submit again once it is back"}

// submit accepts a job, in one sequence with no window in which a job the
// client was refused could run or one it was given an id for could be
// lost: validate → split → record on disk → visible in the jobs map →
// handed to the dispatch loop (unconditionally: a client that goes away
// now does not take the job with it) → the caller answers 201.
func (s *Server) submit(spec api.JobSpec, c caller) (*jobRun, error) {
	owner := c.id
	if s.draining.Load() {
		return nil, errDraining
	}
	if err := s.validateSpec(&spec); err != nil {
		return nil, err
	}
	if spec.InputJob != "" && !s.canSeeJob(c, spec.InputJob) {
		return nil, &apiError{status: 404, code: api.CodeNotFound, msg: fmt.Sprintf("no job %s (input_job)", spec.InputJob)}
	}
	if err := s.manifestFits(spec); err != nil {
		return nil, err
	}
	// Objects named by jobs and DELETE /v1/objects exclude each other
	// (objects.go); Touch keeps the collector off the input (store).
	s.refsMu.RLock()
	defer s.refsMu.RUnlock()
	if spec.Input == "" {
		// splitInputs and splitInputJob touch the inputs
	} else if _, err := s.store.Touch(s.ctx, spec.Input); errors.Is(err, store.ErrNotFound) {
		return nil, &apiError{status: 404, code: api.CodeNoObject, msg: fmt.Sprintf("input object %s does not exist; upload it with `braid put`", spec.Input)}
	}
	j, err := s.split(newJobID(), spec, time.Now())
	if err != nil {
		return nil, err
	}
	j.owner = owner
	if err := s.db.Sync(statedb.PutJob(j.record(api.JobQueued, "", "", time.Time{}))); err != nil {
		return nil, fmt.Errorf("saving the job: %w", err)
	}
	s.addVisible(j)
	if !s.disp.post(func() { s.disp.addJob(j) }) {
		s.log.Warn("server stopped before the job reached the scheduler; it resumes at the next start", "job", j.id)
	}
	s.log.Info("job submitted", "job", j.id, "op", spec.Op, "units", j.total(), "policy", spec.Policy)
	return j, nil
}

// minManifestEntry is the fewest bytes a unit's entry takes in a job's
// result manifest (assemble.go writes one with index, output id and size,
// indented, 118 bytes or more).
const minManifestEntry = 100

// manifestFits refuses a repeat job whose result manifest cannot be stored
// under the server's object size limit: it would run every unit and then
// fail.
func (s *Server) manifestFits(spec api.JobSpec) error {
	limit := s.store.MaxSize()
	if spec.Repeat > 1 && int64(spec.Repeat)*minManifestEntry > limit {
		return badRequest(api.CodeTooLarge, "repeat %d: the result, a manifest of %d units, would be over the server's object size limit of %d bytes (braid server --max-object); at most %d units",
			spec.Repeat, spec.Repeat, limit, limit/minManifestEntry)
	}
	return nil
}

// addVisible puts j in the jobs map clients read.
func (s *Server) addVisible(j *jobRun) {
	s.jobsMu.Lock()
	defer s.jobsMu.Unlock()
	s.jobs[j.id] = j
}
