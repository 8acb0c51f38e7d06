package scheduler

// policy is an assignment policy: how a job's units are divided among
// workers. The mechanism — windows, FIFO order across jobs, operation
// matching, requeueing, speculation — lives in the core; a policy only
// answers how much of a job each worker should get.
//
// A static policy returns one weight per worker (ws, sorted by name, all up
// and able to run the operation); the core turns weights into whole-unit
// shares once, when it first places a unit of that operation for the job
// (see opShare). A nil result means no shares: the job is a pipeline and
// any free slot takes its next unit.
//
// Policies are stateless and called only from the core's goroutine.
type policy interface {
	weights(c *Core, ws []*worker) []float64
	// plans reports whether the policy is static: weights gives shares.
	plans() bool
	// replans reports whether the unsent part of the shares follows the
	// speed estimates as they change.
	replans() bool
}

// policies maps the names in PolicyNames to their implementation.
var policies = map[string]policy{
	"equal":   equalPolicy{},
	"threads": threadsPolicy{},
	"speed":   speedPolicy{},
	"dynamic": dynamicPolicy{},
}
