package worker

// Reannounce has the worker's figures sent again, as a change of the
// machine's figures does.
func (w *Worker) Reannounce() { w.reannounce() }
