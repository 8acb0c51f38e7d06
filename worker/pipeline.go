package worker

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/userop"
	"github.com/braidhq/braid/wire"
)

// A pipeline unit's op names its operations, "blur,sobel"; each step's
// parameters are under its position, "1.sigma", and a user operation's
// step carries its module's digest as "N.braid.digest" (server/pipeline.go).

func isPipeline(op string) bool { return strings.Contains(op, ",") }

// digestKey is the step parameter naming a user operation's module.
const digestKey = "braid.digest"

// pipelineSteps splits a pipeline unit into its operations and their
// parameters.
func pipelineSteps(u wire.Unit) ([]string, []map[string]string, error) {
	names := strings.Split(u.Op, ",")
	params := make([]map[string]string, len(names))
	for i := range params {
		params[i] = map[string]string{}
	}
	for k, v := range u.Params {
		pos, name, _ := strings.Cut(k, ".")
		n, err := strconv.Atoi(pos)
		if err != nil || n < 1 || n > len(names) || name == "" {
			return nil, nil, fmt.Errorf("pipeline parameter %q names no step of %s", k, u.Op)
		}
		params[n-1][name] = v
	}
	return names, params, nil
}

// pipelineRefusal says why the worker cannot run a pipeline unit, or "".
func (s *session) pipelineRefusal(u wire.Unit) string {
	names, params, err := pipelineSteps(u)
	if err != nil {
		return "" // runPipeline fails it with the reason
	}
	for i, name := range names {
		if params[i][digestKey] != "" {
			if why := s.userRefusal(params[i]); why != "" {
				return why
			}
		} else if !s.canRun[name] {
			return fmt.Sprintf("worker %s does not run operation %q", s.w.cfg.Name, name)
		}
	}
	return ""
}

// runPipeline runs a pipeline unit's steps back to back, each one's output
// the next one's input, in memory. A last built-in step with no format
// encodes as the unit's input was (earlier steps pass PNG).
func (s *session) runPipeline(ctx context.Context, u wire.Unit) ([]byte, error) {
	names, params, err := pipelineSteps(u)
	if err != nil {
		return nil, err
	}
	data, format := u.Input, ops.Format(u.Input)
	for i, name := range names {
		p := params[i]
		if d := p[digestKey]; d != "" {
			delete(p, digestKey)
			data, err = s.runUserStep(ctx, name, d, p, data)
		} else {
			if i == len(names)-1 && p["format"] == "" && format != "" {
				p["format"] = format
			}
			data, err = runBuiltin(name, p, data)
		}
		if err != nil {
			return nil, fmt.Errorf("step %d (%s): %w", i+1, name, err)
		}
	}
	return data, nil
}

// runUserStep runs one user operation of a pipeline in the sandbox.
func (s *session) runUserStep(ctx context.Context, name, digest string, params map[string]string, input []byte) ([]byte, error) {
	b, err := hex.DecodeString(digest)
	if err != nil || len(b) != 32 {
		return nil, fmt.Errorf("module digest %.70q is not 64 hex digits", digest)
	}
	inv, err := userop.ParseInvocation(params)
	if err != nil {
		return nil, err
	}
	return s.w.wasm.Run(ctx, name, [32]byte(b), inv, input)
}
