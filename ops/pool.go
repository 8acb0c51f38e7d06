package ops

import "sync"

// syncPool is a typed sync.Pool whose Get returns a zero T when empty.
type syncPool[T any] struct{ p sync.Pool }

func (s *syncPool[T]) Get() *T {
	if v, ok := s.p.Get().(*T); ok {
		return v
	}
	return new(T)
}

func (s *syncPool[T]) Put(v *T) { s.p.Put(v) }
