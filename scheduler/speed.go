package scheduler

// speedPolicy gives each capable worker a share proportional to its
// measured service rate (units per second), learned online from the
// Compute times in UnitFinished and the ServiceRate in Feedback. Before any
// worker is measured the shares follow threads; a worker not yet measured
// while others are counts as a measured worker of average per-thread speed.
// Whenever an estimate changes, the unsent part of every speed job's shares
// is divided again among its share holders.
type speedPolicy struct{}

func (speedPolicy) weights(c *Core, ws []*worker) []float64 {
	out := make([]float64, len(ws))
	for i, w := range ws {
		out[i] = c.estRate(w)
	}
	return out
}

func (speedPolicy) replans() bool { return true }

func (speedPolicy) plans() bool { return true }
