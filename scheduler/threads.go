package scheduler

// threadsPolicy gives each capable worker a share proportional to the
// threads it advertised (section IV.F.2 of the paper).
type threadsPolicy struct{}

func (threadsPolicy) weights(_ *Core, ws []*worker) []float64 {
	out := make([]float64, len(ws))
	for i, w := range ws {
		out[i] = float64(w.threads)
	}
	return out
}

func (threadsPolicy) replans() bool { return false }

func (threadsPolicy) plans() bool { return true }
