package scheduler

// work counts what placement does that would grow with the number of
// workers if it scanned them: the worker records it looks at (visits: a
// member a walk visits, a member a ranking takes in when built or lets go
// when dropped, a worker a scan reads) and the ranking entries it moves
// (moves: heap swaps). Each is an addition. Tests hold the counts per unit
// placed to about the same figure at a hundred and at thousands of workers
// (scale_test.go), so a scan of every worker per unit, or per result,
// fails them however busy the machine is. The counts are only as good as
// the places that add to them: code that loops over workers (c.names,
// c.workers, an index's members or a ranking's items) adds what it reads.
type work struct {
	visits, moves uint64
}
