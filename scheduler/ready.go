package scheduler

// readySet holds unit indexes to be taken lowest first: ascending spans of
// consecutive indexes, as a job's queues are built (a job of a million
// independent units is one span), and a heap of those added later (units
// whose dependencies finished, released, requeued).
type readySet struct {
	spans []span // ascending, disjoint, none empty; taken from the front
	later minHeap[int32]
	n     int
}

// span is the indexes from to to-1.
type span struct{ from, to int32 }

func (r *readySet) len() int { return r.n }

// min returns the least index; the set must not be empty.
func (r *readySet) min() int {
	switch {
	case len(r.spans) == 0:
		return int(r.later.min())
	case r.later.len() == 0:
		return int(r.spans[0].from)
	}
	return int(min(r.spans[0].from, r.later.min()))
}

// pop removes and returns the least index; the set must not be empty.
func (r *readySet) pop() int {
	r.n--
	if len(r.spans) > 0 && (r.later.len() == 0 || r.spans[0].from < r.later.min()) {
		s := &r.spans[0]
		i := s.from
		if s.from++; s.from == s.to {
			r.spans = r.spans[1:]
		}
		return int(i)
	}
	return int(r.later.pop())
}

// push adds index i, which must not be in the set.
func (r *readySet) push(i int) {
	r.n++
	r.later.push(int32(i))
}

// appendInOrder adds index i, greater than every index added so far,
// while the set is being built.
func (r *readySet) appendInOrder(i int) {
	r.n++
	if k := len(r.spans) - 1; k >= 0 && r.spans[k].to == int32(i) {
		r.spans[k].to++
		return
	}
	r.spans = append(r.spans, span{int32(i), int32(i) + 1})
}

// appendSpan adds the indexes from to to-1, all greater than every index
// added so far, while the set is being built.
func (r *readySet) appendSpan(from, to int) {
	if from >= to {
		return
	}
	r.n += to - from
	if k := len(r.spans) - 1; k >= 0 && r.spans[k].to == int32(from) {
		r.spans[k].to = int32(to)
		return
	}
	r.spans = append(r.spans, span{int32(from), int32(to)})
}
