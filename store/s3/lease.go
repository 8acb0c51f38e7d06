package s3

import (
	"context"
	"errors"
	"time"

	"github.com/braidhq/braid/store"
)

// refreshLocked moves an object's lease to now by writing its (empty)
// lease marker, unless this store did so less than TouchEvery ago, then
// checks that the object is still there (or restores it from the trash,
// where a collector on another server may have just put it).
// store.ErrNotFound if it is gone. Call with st held.
func (s *Store) refreshLocked(ctx context.Context, st *stripe, id string) (Info, error) {
	now := time.Now()
	if at, ok := st.recent(id, s.cfg.TouchEvery, now); ok {
		e, err := s.head(ctx, s.objectKey(id))
		return Info{ID: id, Size: e.size, Created: at}, err
	}
	if _, err := s.putSmall(ctx, s.leaseKey(id), nil, false); err != nil {
		return Info{}, err
	}
	e, err := s.headOrRestore(ctx, id)
	if err != nil {
		delete(st.touched, id)
		return Info{}, err
	}
	st.remember(id, now)
	return Info{ID: id, Size: e.size, Created: leaseOf(now, e.at)}, nil
}

// headOrRestore heads an object, restoring it from the trash if it is
// there and not under its key.
func (s *Store) headOrRestore(ctx context.Context, id string) (entry, error) {
	e, err := s.head(ctx, s.objectKey(id))
	if !errors.Is(err, store.ErrNotFound) {
		return e, err
	}
	t, err := s.head(ctx, s.trashKey(id))
	if err != nil {
		return entry{}, err
	}
	if err := s.copyKey(ctx, s.trashKey(id), s.objectKey(id), t.size); err != nil {
		return entry{}, err
	}
	s.cfg.Logger.Info("store/s3: restored an object from the trash: a collector removed it as it was referenced", "object", id)
	return s.head(ctx, s.objectKey(id))
}

// Touch refreshes an object's lease and returns its info.
func (s *Store) Touch(ctx context.Context, id string) (Info, error) {
	if !store.ValidID(id) {
		return Info{}, store.ErrInvalidID
	}
	st := s.lock(id)
	defer st.Unlock()
	return s.refreshLocked(ctx, st, id)
}

// RemoveIfOlder removes an object whose lease is before cutoff.
//
// Across servers nothing orders this against another server's refresh, so
// it goes by way of the trash: copy the object to trash/, delete it, then
// look at the lease again. A refresh that came in meanwhile (its writer
// then found the object, or will find it in the trash) brings the object
// back; otherwise the trash copy goes too. A crash in between leaves the
// object in the trash, where reads still find it and the next collection
// finishes the job.
func (s *Store) RemoveIfOlder(ctx context.Context, id string, cutoff time.Time) (bool, error) {
	if !store.ValidID(id) {
		return false, store.ErrInvalidID
	}
	st := s.lock(id)
	defer st.Unlock()
	old, e, inTrash, err := s.olderThan(ctx, id, cutoff)
	if err != nil || !old {
		return false, err
	}
	if !inTrash {
		if err := s.copyKey(ctx, s.objectKey(id), s.trashKey(id), e.size); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return false, nil
			}
			return false, err
		}
		if err := s.deleteKey(ctx, s.objectKey(id)); err != nil {
			return false, err
		}
	}
	delete(st.touched, id)
	if still, _, _, err := s.olderThan(ctx, id, cutoff); err != nil || !still {
		if err == nil {
			_, err = s.headOrRestore(ctx, id)
		}
		if err == nil {
			err = s.deleteKey(ctx, s.trashKey(id))
		}
		return false, err
	}
	for _, k := range []string{s.trashKey(id), s.leaseKey(id)} {
		if err := s.deleteKey(ctx, k); err != nil {
			return false, err
		}
	}
	if !inTrash {
		s.counted(-1, -e.size)
	}
	return true, nil
}

// olderThan reports whether an object (under its key, or else in the
// trash) has a lease before cutoff, with its entry; a missing object is
// not old.
func (s *Store) olderThan(ctx context.Context, id string, cutoff time.Time) (old bool, e entry, inTrash bool, err error) {
	e, err = s.head(ctx, s.objectKey(id))
	if errors.Is(err, store.ErrNotFound) {
		inTrash = true
		e, err = s.head(ctx, s.trashKey(id))
	}
	if errors.Is(err, store.ErrNotFound) {
		return false, e, inTrash, nil
	}
	if err != nil {
		return false, e, inTrash, err
	}
	lease, err := s.head(ctx, s.leaseKey(id))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return false, e, inTrash, err
	}
	at := e.at
	if inTrash {
		at = time.Time{} // the trash copy's time is the removal's, not a lease
	}
	return leaseOf(at, lease.at).Before(cutoff), e, inTrash, nil
}

// Remove deletes an object at once (a client's explicit delete).
func (s *Store) Remove(ctx context.Context, id string) error {
	if !store.ValidID(id) {
		return store.ErrInvalidID
	}
	st := s.lock(id)
	defer st.Unlock()
	delete(st.touched, id)
	e, err := s.head(ctx, s.objectKey(id))
	inTrash := false
	if errors.Is(err, store.ErrNotFound) {
		inTrash = true
		_, err = s.head(ctx, s.trashKey(id))
	}
	if err != nil {
		return err
	}
	for _, k := range []string{s.objectKey(id), s.trashKey(id), s.leaseKey(id)} {
		if err := s.deleteKey(ctx, k); err != nil {
			return err
		}
	}
	if !inTrash {
		s.counted(-1, -e.size)
	}
	return nil
}
