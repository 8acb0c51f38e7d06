package scheduler

import "math"

// node is a member of one of the rankings a walk visits.
type node struct {
	r   *ranking
	pos int
}

func (n node) worker() *worker { return n.r.items[n.pos].s.w }

// walker visits the members of rankings best first. It keeps its
// frontier between walks, so a walk allocates nothing once warm.
type walker struct {
	front []node
	order func(a, b *worker) int
	// bound: members whose entry's first key (entry.a) is above it are
	// not visited, nor, since a heap's children are no better, is any
	// member below them.
	bound int64
	work  *work // the core's: each member visited counts
}

// start begins a walk of the members of rs best first by order, with
// which each ranking's own order must agree, leaving out those whose
// first key is above bound (math.MaxInt64: none). The rankings must not
// change until the walk ends. A walk costs O(k log k) for k members
// visited, whatever the rankings' sizes.
func (wk *walker) start(rs []*ranking, order func(a, b *worker) int, bound int64) {
	wk.front, wk.order, wk.bound = wk.front[:0], order, bound
	for _, r := range rs {
		wk.push(node{r, 0})
	}
}

// next visits the next member; false when there is none left.
func (wk *walker) next() (*worker, bool) {
	if len(wk.front) == 0 {
		return nil, false
	}
	n := wk.pop()
	wk.work.visits++
	for c := 2*n.pos + 1; c <= 2*n.pos+2; c++ {
		wk.push(node{n.r, c})
	}
	return n.worker(), true
}

// walk visits the members of rs best first by order until visit returns
// true (start says what rs and order must be).
func (wk *walker) walk(rs []*ranking, order func(a, b *worker) int, visit func(w *worker) bool) {
	wk.start(rs, order, math.MaxInt64)
	for {
		w, ok := wk.next()
		if !ok || visit(w) {
			return
		}
	}
}

func (wk *walker) push(n node) {
	if n.pos >= len(n.r.items) || n.r.items[n.pos].a > wk.bound {
		return
	}
	f := append(wk.front, n)
	for i := len(f) - 1; i > 0; {
		p := (i - 1) / 2
		if wk.order(f[i].worker(), f[p].worker()) >= 0 {
			break
		}
		f[i], f[p] = f[p], f[i]
		i = p
	}
	wk.front = f
}

func (wk *walker) pop() node {
	f := wk.front
	n, last := f[0], len(f)-1
	f[0] = f[last]
	f = f[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(f) && wk.order(f[l].worker(), f[m].worker()) < 0 {
			m = l
		}
		if l+1 < len(f) && wk.order(f[l+1].worker(), f[m].worker()) < 0 {
			m = l + 1
		}
		if m == i {
			break
		}
		f[i], f[m] = f[m], f[i]
		i = m
	}
	wk.front = f
	return n
}
