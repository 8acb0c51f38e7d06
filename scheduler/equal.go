package scheduler

// equalPolicy gives every capable worker the same number of units, as in
// section IV.F.1 of the paper; rounding leftovers go to the first workers
// by name. It is the policy that shows the paradox: a slow worker gets as
// many units as a fast one and the job waits for it.
type equalPolicy struct{}

func (equalPolicy) weights(_ *Core, ws []*worker) []float64 {
	out := make([]float64, len(ws))
	for i := range out {
		out[i] = 1
	}
	return out
}

func (equalPolicy) replans() bool { return false }

func (equalPolicy) plans() bool { return true }
