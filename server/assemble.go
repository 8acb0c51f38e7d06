package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"io"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/server/statedb"
	"github.com/braidhq/braid/store"
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
			b, err := store.ReadAll(s.ctx, s.store, id, maxUnitInput)
			if err != nil {
				return "", fmt.Errorf("tile %d: %w", i, err)
			}
			outs[i] = b
		}
		img, err := ops.Stitch(a.tiles, outs, a.format, a.bounds)
		if err != nil {
			return "", err
		}
		info, err := s.store.PutBytes(s.ctx, img)
		return info.ID, err
	case len(outputs) == 1 && a.inputs == nil:
		return outputs[0], nil
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(s.writeManifest(pw, j, a, outputs)) }()
	info, err := s.store.Put(s.ctx, pr)
	pr.Close() // a Put that failed early unblocks the writer
	return info.ID, err
}

// writeManifest streams a job's api.Manifest, one unit per line, so that
// a job of 100,000 units never has its manifest whole in memory.
func (s *Server) writeManifest(w io.Writer, j *jobRun, a assembly, outputs []string) error {
	bw := bufio.NewWriter(w)
	head, err := json.Marshal(api.Manifest{Job: j.id, Op: j.spec.Op, Input: j.spec.Input})
	if err != nil {
		return err
	}
	// head ends in "units":null}; the units follow in its place.
	bw.Write(bytes.TrimSuffix(head, []byte("null}")))
	bw.WriteString("[")
	sizes := map[string]int64{} // repeat jobs often have one output for all
	for i, id := range outputs {
		size, ok := sizes[id]
		if !ok {
			if info, err := s.store.Stat(s.ctx, id); err == nil {
				size = info.Size
			}
			if a.inputs == nil {
				sizes[id] = size // a job of many inputs has as many outputs: no cache
			}
		}
		u := api.ManifestUnit{Index: i, Output: id, Size: size}
		if a.inputs != nil {
			u.Input = statedb.HexID(a.inputs[i])
		}
		if i < len(j.spec.InputNames) {
			u.Name = j.spec.InputNames[i]
		}
		b, err := json.Marshal(u)
		if err != nil {
			return err
		}
		if i > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n ")
		bw.Write(b)
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
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
		if u := &j.units.recs[i]; u.HasOutput() {
			out[i] = statedb.HexID(u.Output)
		}
	}
	return out
}
