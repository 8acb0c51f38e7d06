package worker

// Reannounce has the worker's figures sent again, as a change of the
// machine's figures does.
func (w *Worker) Reannounce() { w.reannounce() }

// AbortAssociations aborts every association the worker has, as a
// network fault that ends them would.
func (w *Worker) AbortAssociations(reason error) {
	w.sessMu.Lock()
	defer w.sessMu.Unlock()
	for s := range w.sessions {
		s.a.Abort(reason)
	}
}
