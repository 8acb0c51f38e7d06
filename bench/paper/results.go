package paper

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// figureResult assembles one figure's runs, summaries and decreases.
func (r *Result) figureResult(f figure) FigureResult {
	fr := FigureResult{ID: f.ID, Title: f.Title}
	for _, l := range f.Lines {
		rs := r.Measured[l.key()]
		if len(rs) == 0 {
			fr.Missing = append(fr.Missing, l.Label)
			continue
		}
		for _, rec := range rs {
			rec.Figure, rec.Line = f.ID, l.Label
			fr.Records = append(fr.Records, rec)
		}
		fr.Summary = append(fr.Summary, summaries(l.Label, rs, r.Config.Units)...)
	}
	if f.Peer && len(r.Peer) > 0 {
		for _, rec := range r.Peer {
			rec.Figure = f.ID
			fr.Records = append(fr.Records, rec)
		}
		fr.Summary = append(fr.Summary, summaries(r.Peer[0].Line, r.Peer, r.Config.Units)...)
	}
	for _, p := range f.Pairs {
		d := decreases(p.Label, r.Measured[p.Base.key()], r.Measured[p.Other.key()], r.Config.Units)
		if d == nil {
			fr.Missing = append(fr.Missing, p.Label)
		}
		fr.Decreases = append(fr.Decreases, d...)
	}
	if f.Pairs != nil && fr.Decreases == nil {
		fr.Decreases = []Decrease{}
	}
	return fr
}

// write writes every figure's files and REPORT.md.
func (r *Result) write(figs []figure) []error {
	var errs []error
	for _, f := range figs {
		fr := r.figureResult(f)
		r.Figures = append(r.Figures, fr)
		errs = append(errs, fr.write(r.Config.Out), fr.draw(r.Config.Out, r.Config.Units))
	}
	errs = append(errs, r.writeInfo())
	rep := r.report()
	if err := os.WriteFile(filepath.Join(r.Config.Out, "REPORT.md"), []byte(rep), 0o644); err != nil {
		errs = append(errs, fmt.Errorf("paper: %w", err))
	}
	return []error{errors.Join(errs...)}
}

func joinErrs(errs []error) error { return errors.Join(errs...) }
