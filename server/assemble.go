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

// assemble builds a finished job's result object from its units' outputs,
// read from state.db once every accepted unit's record is there: the
// stitched image of a tiled job, the output itself of a job of one unit
// (with or without repeat: 1), or a manifest naming every unit's output
// for a repeat job of several or a job of many inputs.
func (s *Server) assemble(j *jobRun, a assembly) (string, error) {
	s.db.Flush()
	n := j.total()
	switch {
	case a.tiles != nil:
		outs := make([][]byte, n)
		err := s.eachOutput(j.id, n, func(i int, id string) error {
			b, err := store.ReadAll(s.ctx, s.store, id, maxUnitInput)
			if err != nil {
				return fmt.Errorf("tile %d: %w", i, err)
			}
			outs[i] = b
			return nil
		})
		if err != nil {
			return "", err
		}
		img, err := ops.Stitch(a.tiles, outs, a.format, a.bounds)
		if err != nil {
			return "", err
		}
		info, err := s.store.PutBytes(s.ctx, img)
		return info.ID, err
	case n == 1 && a.inputs == nil:
		var out string
		err := s.eachOutput(j.id, n, func(_ int, id string) error { out = id; return nil })
		return out, err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(s.writeManifest(pw, j, a, n)) }()
	info, err := s.store.Put(s.ctx, pr)
	pr.Close() // a Put that failed early unblocks the writer
	return info.ID, err
}

// eachOutput calls f with the output of each of job's n units, in index
// order, failing if a unit has no output on record.
func (s *Server) eachOutput(job string, n int, f func(i int, id string) error) error {
	next := 0
	err := s.db.EachUnit(job, n, func(su statedb.StoredUnit) error {
		if su.Index != next || su.Rec.State != statedb.UnitDone || !su.Rec.HasOutput() {
			return fmt.Errorf("unit %d has no output on record", next)
		}
		next++
		return f(su.Index, statedb.HexID(su.Rec.Output))
	})
	if err == nil && next != n {
		err = fmt.Errorf("unit %d has no output on record", next)
	}
	return err
}

// writeManifest streams a job's api.Manifest, one entry per line, so that
// no manifest is ever whole in memory. Consecutive units of a repeat job
// with the same output share an entry (ManifestUnit.Count): a no-op job of
// ten million units has a manifest of one line.
func (s *Server) writeManifest(w io.Writer, j *jobRun, a assembly, n int) error {
	bw := bufio.NewWriter(w)
	head, err := json.Marshal(api.Manifest{Job: j.id, Op: j.spec.Op, Input: j.spec.Input})
	if err != nil {
		return err
	}
	// head ends in "units":null}; the units follow in its place.
	bw.Write(bytes.TrimSuffix(head, []byte("null}")))
	bw.WriteString("[")
	sizes := map[string]int64{} // repeat jobs often have one output for all
	var run api.ManifestUnit    // the entry being built; Count 0: none yet
	entries := 0
	emit := func() error {
		if run.Count == 0 {
			return nil
		}
		if run.Count == 1 {
			run.Count = 0 // one unit: said as before runs existed
		}
		b, err := json.Marshal(run)
		if err != nil {
			return err
		}
		if entries > 0 {
			bw.WriteString(",")
		}
		entries++
		bw.WriteString("\n ")
		bw.Write(b)
		return nil
	}
	err = s.eachOutput(j.id, n, func(i int, id string) error {
		if a.inputs == nil && len(j.spec.InputNames) == 0 && run.Count > 0 && run.Output == id {
			run.Count++
			return nil
		}
		if err := emit(); err != nil {
			return err
		}
		size, ok := sizes[id]
		if !ok {
			if info, err := s.store.Stat(s.ctx, id); err == nil {
				size = info.Size
			}
			if a.inputs == nil {
				sizes[id] = size // a job of many inputs has as many outputs: no cache
			}
		}
		run = api.ManifestUnit{Index: i, Output: id, Size: size, Count: 1}
		if a.inputs != nil {
			run.Input = statedb.HexID(a.inputs[i])
		}
		if i < len(j.spec.InputNames) {
			run.Name = j.spec.InputNames[i]
		}
		return nil
	})
	if err == nil {
		err = emit()
	}
	if err != nil {
		return err
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}
