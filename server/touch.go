package server

import (
	"sync"

	"github.com/braidhq/braid/store"
)

// touchParallel is how many objects a submit touches at once: a remote
// store answers each in a round trip or two, and a job may name 100,000.
const touchParallel = 16

// touchAll touches the objects ids (store.Touch) and returns their infos
// by index; on failure, the lowest index that failed and its error.
func (s *Server) touchAll(ids []string) ([]store.Info, int, error) {
	infos := make([]store.Info, len(ids))
	errs := make([]error, len(ids))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(touchParallel, len(ids)) {
		wg.Go(func() {
			for i := range next {
				infos[i], errs[i] = s.store.Touch(s.ctx, ids[i])
			}
		})
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, i, err
		}
	}
	return infos, -1, nil
}
