package paper

import (
	"fmt"
	"slices"

	"github.com/braidhq/braid/internal/transports"
)

// figures builds the figures of section IV, with the transport standing for
// SCTP resolved, and figure 16 — the policies the paper lacked.
func figures() []figure {
	s := sctpName()
	tcp2 := oneWorker("tcp", 2)
	s2 := oneWorker(s, 2)
	fig6 := dedupe([]line{tcp2, s2, oneWorker("tcpn", 2)})
	if slices.Contains(transports.Names, "quic") {
		fig6 = dedupe(append(fig6, oneWorker("quic", 2)))
	}
	var fig7 []pair
	for _, l := range fig6[1:] {
		fig7 = append(fig7, pair{Label: l.Label + " vs tcp", Base: tcp2, Other: l})
	}
	two := twoWorkers(s)
	normal := mk("normal worker (c1), 2 threads", machines(1, 2, s), "equal", false)
	slow := mk("slow worker (c3), 2 threads", []workerSpec{{Threads: 2, Transport: s, Slow: true}}, "equal", false)
	base2 := mk("2 workers, 2:2 threads, equal", machines(2, 2, s), "equal", false)
	baseT := mk("2 workers, 2:2 threads, threads", machines(2, 2, s), "threads", false)
	base3 := mk("2 workers, 3:3 threads, threads", machines(2, 3, s), "threads", false)
	baseD := mk("2 workers, 2:2 threads, dynamic + speculation", machines(2, 2, s), "dynamic", true)
	return []figure{
		{ID: "fig4", Title: fmt.Sprintf("Fig. 4: one worker, one %s stream", s), Lines: []line{oneWorker(s, 1)}},
		{ID: "fig5", Title: fmt.Sprintf("Fig. 5: one worker, 1/2/3/5 %s streams", s),
			Lines: []line{oneWorker(s, 1), s2, oneWorker(s, 3), oneWorker(s, 5)}},
		{ID: "fig6", Title: fmt.Sprintf("Fig. 6: tcp vs %s, 2 streams (+ fair baselines)", s), Lines: fig6},
		{ID: "fig7", Title: "Fig. 7: % decrease of avg time per unit vs tcp, 2 streams", Pairs: fig7},
		{ID: "fig8", Title: fmt.Sprintf("Fig. 8: 2 workers × 2 %s streams", s), Lines: dedupe([]line{two, twoWorkers("tcpn")}), Peer: true},
		{ID: "fig9", Title: fmt.Sprintf("Fig. 9: 1 worker vs 2 workers, 2 %s streams each", s),
			Lines: []line{s2, two}, Peer: true},
		{ID: "fig10", Title: "Fig. 10: % decrease, 2 workers vs 1 worker (2 streams each)",
			Pairs: []pair{{Label: "2 workers vs 1 worker", Base: s2, Other: two}}},
		{ID: "fig11", Title: fmt.Sprintf("Fig. 11: %% decrease, 2 %s workers vs 1 tcp worker", s),
			Pairs: []pair{{Label: fmt.Sprintf("2 %s workers vs 1 tcp worker", s), Base: tcp2, Other: two}}},
		{ID: "fig12", Title: "Fig. 12: a slow worker alone vs a normal one", Lines: []line{normal, slow}},
		{ID: "fig13", Title: "Fig. 13: 2 workers vs 2 + slow, equal shares",
			Lines: []line{base2, withSlow(s, 2, 2, "equal", false)}},
		{ID: "fig14", Title: "Fig. 14: 2 workers vs 2 + slow, shares by threads 2:2:1",
			Lines: []line{baseT, withSlow(s, 2, 1, "threads", false)}},
		{ID: "fig15", Title: "Fig. 15: 2 workers vs 2 + slow, shares by threads 3:3:1",
			Lines: []line{base3, withSlow(s, 3, 1, "threads", false)}},
		{ID: "fig16", Title: "Beyond the paper: 2 workers vs 2 + slow under speed and dynamic",
			Lines: []line{baseD, withSlow(s, 2, 2, "speed", false), withSlow(s, 2, 2, "dynamic", false),
				withSlow(s, 2, 2, "dynamic", true)}},
	}
}

// dedupe drops lines measuring the same thing as an earlier one (sctp
// standing in as tcpn, say).
func dedupe(ls []line) []line {
	var out []line
	for _, l := range ls {
		if !slices.ContainsFunc(out, func(o line) bool { return o.key() == l.key() }) {
			out = append(out, l)
		}
	}
	return out
}

// selectFigures keeps the figures named in ids (all when empty) and drops
// the slow-worker ones when noSlow.
func selectFigures(all []figure, ids []string, noSlow bool) []figure {
	var out []figure
	for _, f := range all {
		if (len(ids) == 0 || slices.Contains(ids, f.ID)) && !(noSlow && f.slow()) {
			out = append(out, f)
		}
	}
	return out
}
