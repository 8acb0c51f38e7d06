package scheduler

// dynamicPolicy has no shares: the job is a pipeline and any stream with
// window room takes the next pending unit — the paper's closing suggestion.
// A slow worker only ever holds as many units as its window, so it cannot
// hold the job back by more than those few; end-of-job speculation
// (Speculate) removes even that.
type dynamicPolicy struct{}

func (dynamicPolicy) weights(*Core, []*worker) []float64 { return nil }

func (dynamicPolicy) replans() bool { return false }

func (dynamicPolicy) plans() bool { return false }
