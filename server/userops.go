package server

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/server/statedb"
)

// userOps is the catalogue of user operations (docs/user-ops.md): every
// version of every name ever registered, so that a job keeps running the
// version it was submitted with after the name is registered again or
// removed. It mirrors state.db's operations bucket.
type userOps struct {
	mu    sync.RWMutex // guards names and the records
	names map[string][]*opRecord
}

// opRecord is one version of a user operation. Removed versions stay for
// the jobs that use them; no new job can.
type opRecord struct {
	Op      api.Operation `json:"op"`
	Removed bool          `json:"removed,omitempty"`
}

// wasmCapability is the scheduler's name for "runs user operations in
// WebAssembly": a worker that advertises the wasm runtime can run every
// such operation (it fetches the code), so their units all ask for it.
// A script's units ask for "@exec:" and their interpreter, or
// "@exec-net:" if the operation asks for the network.
const wasmCapability = "@wasm"

// capability is what a worker must have to run the user operation name at
// version, or to run the built-in operation name.
func (s *Server) capability(name string, version int) string {
	if _, ok := ops.Lookup(name); ok {
		return name
	}
	if rec := s.userOps.version(name, version); rec != nil && rec.Op.ABI == api.ABIExec {
		if rec.Op.Limits != nil && rec.Op.Limits.Network {
			return "@exec-net:" + rec.Op.Interpreter
		}
		return "@exec:" + rec.Op.Interpreter
	}
	return wasmCapability
}

// schedOp is the operation name the scheduler matches a job's units to
// workers by: what every step needs, joined by '+', for a pipeline.
func (s *Server) schedOp(spec api.JobSpec) string {
	if !isPipeline(spec.Op) {
		return s.capability(spec.Op, spec.OpVersion)
	}
	var caps []string
	for name := range strings.SplitSeq(spec.Op, ",") {
		if c := s.capability(name, spec.OpVersions[name]); !slices.Contains(caps, c) {
			caps = append(caps, c)
		}
	}
	slices.Sort(caps)
	return strings.Join(caps, "+")
}

// waitingText says in words what the scheduler's capabilities in a
// Waiting message mean: "@wasm" and "@exec:sh", alone or in a pipeline's
// "blur+@exec:sh".
func waitingText(waiting string) string {
	if !strings.Contains(waiting, "@") {
		return waiting
	}
	var out strings.Builder
	var hints []string
	rest := waiting
	for {
		i := strings.IndexByte(rest, '"')
		j := strings.IndexByte(rest[i+1:], '"')
		if i < 0 || j < 0 {
			out.WriteString(rest)
			break
		}
		out.WriteString(rest[:i+1])
		var parts []string
		for c := range strings.SplitSeq(rest[i+1:i+1+j], "+") {
			interp, exec := strings.CutPrefix(c, "@exec:")
			netInterp, execNet := strings.CutPrefix(c, "@exec-net:")
			switch {
			case c == wasmCapability:
				parts = append(parts, "WebAssembly user operations")
				hints = append(hints, "workers run WebAssembly unless started with --no-wasm")
			case exec:
				parts = append(parts, interp+" scripts")
				hints = append(hints, "only workers started with --allow-exec "+interp+" run "+interp+" scripts")
			case execNet:
				parts = append(parts, netInterp+" scripts with network")
				hints = append(hints, "only workers started with --allow-exec "+netInterp+" --exec-network run "+netInterp+" scripts that use the network")
			default:
				parts = append(parts, c)
			}
		}
		out.WriteString(strings.Join(parts, " and ") + `"`)
		rest = rest[i+2+j:]
	}
	if len(hints) > 0 {
		out.WriteString(" (" + strings.Join(slices.Compact(hints), "; ") + ")")
	}
	return out.String()
}

// schedOps are the scheduler's operation names for a worker.
func schedOps(info api.WorkerInfo) []string {
	out := slices.Clone(info.Ops)
	for _, r := range info.Runtimes {
		out = append(out, "@"+r)
	}
	return out
}

// putOp is the change that writes a version's record.
func putOp(rec *opRecord) statedb.Change {
	return statedb.PutOp(rec.Op.Name, rec.Op.Version, rec)
}

// loadUserOps reads the catalogue from state.db.
func loadUserOps(db *statedb.DB) (*userOps, error) {
	c := &userOps{names: map[string][]*opRecord{}}
	err := db.Ops(func(k, v []byte) error {
		rec := &opRecord{}
		if err := json.Unmarshal(v, rec); err != nil {
			return fmt.Errorf("operation record %q: %w", k, err)
		}
		c.names[rec.Op.Name] = append(c.names[rec.Op.Name], rec)
		return nil
	})
	return c, err
}

// current is the name's newest version, unless it was removed.
func (c *userOps) current(name string) *opRecord {
	c.mu.RLock()
	defer c.mu.RUnlock()
	vs := c.names[name]
	if len(vs) == 0 || vs[len(vs)-1].Removed {
		return nil
	}
	return vs[len(vs)-1]
}

// removed reports whether rec was removed.
func (c *userOps) removed(rec *opRecord) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return rec.Removed
}

// version is the name's given version, removed or not.
func (c *userOps) version(name string, v int) *opRecord {
	c.mu.RLock()
	defer c.mu.RUnlock()
	vs := c.names[name]
	if v < 1 || v > len(vs) {
		return nil
	}
	return vs[v-1]
}

// list is every current user operation, by name.
func (c *userOps) list() []api.Operation {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []api.Operation
	for _, vs := range c.names {
		if cur := vs[len(vs)-1]; !cur.Removed {
			out = append(out, cur.Op)
		}
	}
	slices.SortFunc(out, func(a, b api.Operation) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// hasCode reports whether digest (an object id) is the module of some
// version, and whether of a version not removed.
func (c *userOps) hasCode(digest string) (any, live bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, vs := range c.names {
		for _, r := range vs {
			if r.Op.Digest == digest {
				any = true
				live = live || !r.Removed
			}
		}
	}
	return any, live
}

// add makes spec, already checked, the name's new version, unless the
// current version is the same; write makes the record durable and runs
// under the catalogue's lock, so versions are numbered in order. It
// reports whether a version was made.
func (c *userOps) add(op api.Operation, write func(*opRecord) error) (*opRecord, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	vs := c.names[op.Name]
	if n := len(vs); n > 0 && !vs[n-1].Removed && sameOp(vs[n-1].Op, op) {
		return vs[n-1], false, nil
	}
	op.Version = len(vs) + 1
	rec := &opRecord{Op: op}
	if err := write(rec); err != nil {
		return nil, false, err
	}
	c.names[op.Name] = append(vs, rec)
	return rec, true, nil
}

// sameOp compares what a registration says, not when or by whom.
func sameOp(a, b api.Operation) bool {
	a.Version, a.Created, a.Owner = 0, b.Created, b.Owner
	return reflect.DeepEqual(a, b)
}

// remove marks every version of name removed; write makes each durable.
func (c *userOps) remove(name string, write func([]*opRecord) error) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	vs := c.names[name]
	if len(vs) == 0 || vs[len(vs)-1].Removed {
		return false, nil
	}
	var changed []*opRecord
	for _, r := range vs {
		if !r.Removed {
			cp := *r
			cp.Removed = true
			changed = append(changed, &cp)
		}
	}
	if err := write(changed); err != nil {
		return false, err
	}
	for _, r := range vs {
		r.Removed = true
	}
	return true, nil
}
