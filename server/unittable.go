package server

import (
	"math"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/server/statedb"
)

// unitTable holds a job's unit records with the worker names interned.
type unitTable struct {
	recs    []statedb.Unit
	workers []string
	byName  map[string]uint16
	errs    map[int]string // failed units' error text
}

func newUnitTable(n int) *unitTable {
	return &unitTable{recs: make([]statedb.Unit, n), byName: map[string]uint16{}}
}

// intern returns name's worker number, adding it if new. Past 65,535
// names (never in practice) units are credited to no worker.
func (t *unitTable) intern(name string) uint16 {
	if k, ok := t.byName[name]; ok {
		return k
	}
	if len(t.workers) == math.MaxUint16 {
		return 0
	}
	t.workers = append(t.workers, name)
	k := uint16(len(t.workers))
	t.byName[name] = k
	return k
}

func (t *unitTable) workerName(k uint16) string {
	if k == 0 || int(k) > len(t.workers) {
		return ""
	}
	return t.workers[k-1]
}

func (t *unitTable) setError(i int, text string) {
	if t.errs == nil {
		t.errs = map[int]string{}
	}
	t.errs[i] = text
}

// stat builds unit i's api.UnitStat.
func (t *unitTable) stat(i int) api.UnitStat {
	return t.recs[i].Stat(i, t.workerName(t.recs[i].Worker), t.errs[i])
}
