package scale

import (
	"cmp"
	"slices"
)

// SlowPoll is one poll of the API among the slowest of a run.
type SlowPoll struct {
	Path string  `json:"path"` // workers, jobs or healthz
	MS   float64 `json:"ms"`
	// AtS is when it began, in seconds after the first poll of the run.
	AtS float64 `json:"at_s"`
}

// slowest returns the n slowest polls of rep, slowest first. A report
// without start times (an older child) gives none.
func slowest(rep pollReport, n int) []SlowPoll {
	var all []SlowPoll
	first := 0.0
	for _, s := range []struct {
		path string
		pollSeries
	}{{"workers", rep.Workers}, {"jobs", rep.Jobs}, {"healthz", rep.Healthz}} {
		if len(s.At) != len(s.MS) {
			return nil
		}
		for i, ms := range s.MS {
			all = append(all, SlowPoll{Path: s.path, MS: ms, AtS: s.At[i]})
			if first == 0 || s.At[i] < first {
				first = s.At[i]
			}
		}
	}
	slices.SortFunc(all, func(a, b SlowPoll) int { return cmp.Compare(b.MS, a.MS) })
	all = all[:min(n, len(all))]
	for i := range all {
		all[i].AtS -= first
	}
	return all
}
