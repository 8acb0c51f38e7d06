package server

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/userop"
)

// MaxSteps bounds the operations of a pipeline.
const MaxSteps = 8

// A pipeline is a job whose op names several operations, "blur,sobel":
// each unit runs them back to back on the worker that holds it, bytes
// passed in memory. Its parameters name their step, by operation
// ("blur.sigma") or by position from 1 ("1.sigma", which wins); "format"
// alone is the pipeline's output encoding. A unit carries each step's
// parameters under its position, "2.sigma", and a user operation's
// invocation with its module's digest (2.braid.digest), so the worker
// needs nothing else.

func isPipeline(op string) bool { return strings.Contains(op, ",") }

// firstOp is a pipeline's first operation, or op itself.
func firstOp(op string) string {
	first, _, _ := strings.Cut(op, ",")
	return first
}

// step is one operation of a pipeline and its parameters.
type step struct {
	name    string
	builtin ops.Op // nil for a user operation
	params  map[string]string
}

// pipelineSteps parses a pipeline's op and spreads its parameters over
// the steps.
func pipelineSteps(spec api.JobSpec) ([]step, error) {
	names := strings.Split(spec.Op, ",")
	if len(names) > MaxSteps {
		return nil, badRequest(api.CodeBadRequest, "a pipeline of %d operations: at most %d", len(names), MaxSteps)
	}
	steps := make([]step, len(names))
	for i, name := range names {
		if name == "" {
			return nil, badRequest(api.CodeBadRequest, "op %q: a pipeline names operations separated by commas, none empty", spec.Op)
		}
		steps[i] = step{name: name, params: map[string]string{}}
		steps[i].builtin, _ = ops.Lookup(name)
	}
	byPosition := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(spec.Params)) {
		v := spec.Params[k]
		prefix, name, ok := strings.Cut(k, ".")
		switch {
		case k == "format":
			last := &steps[len(steps)-1]
			if last.builtin == nil {
				return nil, badRequest(api.CodeBadParameter, "format: the pipeline's last operation, %s, is a user operation, whose output is what it writes", last.name)
			}
			if _, set := last.params["format"]; !set {
				last.params["format"] = v
			}
		case !ok:
			return nil, badRequest(api.CodeBadParameter, "parameter %q: in a pipeline, name its operation (OP.%s) or its position (N.%s, from 1)", k, k, k)
		case isDigits(prefix):
			byPosition[k] = v
		default:
			found := false
			for i := range steps {
				if steps[i].name == prefix {
					steps[i].params[name], found = v, true
				}
			}
			if !found {
				return nil, badRequest(api.CodeBadParameter, "parameter %q: %s is not an operation of the pipeline %s", k, prefix, spec.Op)
			}
		}
	}
	for k, v := range byPosition {
		prefix, name, _ := strings.Cut(k, ".")
		n, err := strconv.Atoi(prefix)
		if err != nil || n < 1 || n > len(steps) {
			return nil, badRequest(api.CodeBadParameter, "parameter %q: the pipeline has steps 1 to %d", k, len(steps))
		}
		steps[n-1].params[name] = v
	}
	return steps, nil
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// validatePipeline checks each step like a job of its own and pins the
// versions of its user operations (JobSpec.OpVersions). Its reach is the
// sum of the steps': what a pixel of the output depends on.
func (s *Server) validatePipeline(spec *api.JobSpec) (func() (int, error), error) {
	if spec.OpVersion != 0 || spec.OpDigest != "" {
		return nil, badRequest(api.CodeBadRequest, "op_version and op_digest pin one operation; a pipeline pins its user operations' versions in op_versions")
	}
	steps, err := pipelineSteps(*spec)
	if err != nil {
		return nil, err
	}
	versions := map[string]int{}
	var reaches []func() (int, error)
	for i, st := range steps {
		if st.builtin != nil {
			if err := st.builtin.Validate(ops.Params(st.params)); err != nil {
				return nil, badRequest(api.CodeBadParameter, "step %d: %v", i+1, err)
			}
			op, params := st.builtin, ops.Params(st.params)
			reaches = append(reaches, func() (int, error) { return op.Reach(params) })
			continue
		}
		one := api.JobSpec{Op: st.name, OpVersion: spec.OpVersions[st.name]}
		rec, err := s.pinUserOp(&one)
		if err != nil {
			return nil, err
		}
		if _, err := userop.Values(st.name, rec.Op.Params, st.params); err != nil {
			return nil, badRequest(api.CodeBadParameter, "step %d: %v", i+1, trimErr(err, userop.ErrBadParam))
		}
		versions[st.name] = rec.Op.Version
		reaches = append(reaches, func() (int, error) { return userReach(rec) })
	}
	for name := range spec.OpVersions {
		if _, ok := versions[name]; !ok {
			return nil, badRequest(api.CodeBadRequest, "op_versions names %s, which is not a user operation of the pipeline", name)
		}
	}
	switch {
	case len(versions) == 0 && spec.UnitTimeoutMS != 0:
		return nil, badRequest(api.CodeBadRequest, "unit_timeout_ms is for user operations; the pipeline %s has none", spec.Op)
	case len(versions) == 0:
		spec.OpVersions = nil
	default:
		spec.OpVersions = versions
	}
	if err := userop.CheckJobTimeout(spec.UnitTimeoutMS); err != nil {
		return nil, badRequest(api.CodeBadParameter, "%v", trimErr(err, userop.ErrBadParam))
	}
	return sumReach(reaches), nil
}

// sumReach adds the steps' reaches; a step that cannot be tiled makes the
// pipeline untileable.
func sumReach(reaches []func() (int, error)) func() (int, error) {
	return func() (int, error) {
		total := 0
		for i, r := range reaches {
			n, err := r()
			if err != nil {
				return 0, fmt.Errorf("step %d: %w", i+1, err)
			}
			total += n
		}
		return total, nil
	}
}

// setupPipeline builds what a pipeline's units carry. Built-in steps
// pass images to each other as PNG, lossless; the last one encodes as
// "format" says, or as the unit's input was (the worker sees to that), or
// as PNG for tiles.
func (s *Server) setupPipeline(spec api.JobSpec) (unitSetup, error) {
	steps, err := pipelineSteps(spec)
	if err != nil {
		return unitSetup{}, err
	}
	params := ops.Params{}
	var reaches []func() (int, error)
	var modules []string
	for i, st := range steps {
		prefix := strconv.Itoa(i+1) + "."
		if st.builtin != nil {
			p := maps.Clone(st.params)
			last := i == len(steps)-1
			if _, set := p["format"]; (!last && !set) || (last && spec.Tiles != "") {
				p["format"] = "png"
			}
			for k, v := range p {
				params[prefix+k] = v
			}
			op, stepParams := st.builtin, ops.Params(st.params)
			reaches = append(reaches, func() (int, error) { return op.Reach(stepParams) })
			continue
		}
		rec, inv, err := s.userInvocation(st.name, spec.OpVersions[st.name], st.params, spec.UnitTimeoutMS)
		if err != nil {
			return unitSetup{}, err
		}
		for k, v := range inv.UnitParams() {
			params[prefix+k] = v
		}
		params[prefix+"braid.digest"] = rec.Op.Digest
		modules = append(modules, rec.Op.Digest)
		reaches = append(reaches, func() (int, error) { return userReach(rec) })
	}
	return unitSetup{params: params, image: steps[0].builtin != nil, reach: sumReach(reaches), modules: modules}, nil
}
