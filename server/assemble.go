package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
)

// assembly is what assembling a job's result needs, copied on the dispatch
// loop so that the assembling goroutine shares nothing with it.
type assembly struct {
	inputs [][32]byte // a job of many inputs: each unit's
	tiles  []ops.Tile
	format string
	bounds image.Rectangle
}

// assemble builds a finished job's result object from its units' outputs:
// the stitched image of a tiled job, the output itself of a job of one unit
// (with or without repeat: 1), or a manifest naming exactly one output per
// unit of a repeat job of several.
func (s *Server) assemble(j *jobRun, a assembly) (string, error) {
	outputs := j.outputs()
	switch {
	case a.tiles != nil:
		outs := make([][]byte, len(outputs))
		for i, id := range outputs {
			b, err := s.store.ReadAll(id, maxUnitInput)
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
	case len(outputs) == 1 && a.inputs == nil:
		return outputs[0], nil
	}
	m := api.Manifest{Job: j.id, Op: j.spec.Op, Input: j.spec.Input, Units: make([]api.ManifestUnit, len(outputs))}
	sizes := map[string]int64{} // repeat jobs often have one output for all
	for i, id := range outputs {
		size, ok := sizes[id]
		if !ok {
			if info, err := s.store.Stat(id); err == nil {
				size = info.Size
			}
			sizes[id] = size
		}
		m.Units[i] = api.ManifestUnit{Index: i, Output: id, Size: size}
		if a.inputs != nil {
			m.Units[i].Input = hexID(a.inputs[i])
		}
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return "", err
	}
	info, err := s.store.Put(bytes.NewReader(b))
	return info.ID, err
}

// outputs lists the units' output object ids, by index, while the unit
// statistics are in memory.
func (j *jobRun) outputs() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.units == nil {
		return nil
	}
	out := make([]string, len(j.units.recs))
	for i := range j.units.recs {
		if u := &j.units.recs[i]; u.hasOutput() {
			out[i] = hexID(u.output)
		}
	}
	return out
}
