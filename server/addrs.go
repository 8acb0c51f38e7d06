package server

import "github.com/braidhq/braid/api"

// addrOwners records, for each worker endpoint (its transport and
// address), the worker that registered it last (on the loop). One process
// listens at an address, so a worker whose endpoint another has registered
// since is not there any more. Dialed for it, the process there would take
// the association for a new one from this server and drop the one it has
// (worker.admit supersedes by server id), and the server would refuse the
// dial only after the handshake (workerConn.answers): every redial, until
// the stale registration timed out, cost the new holder its association.
// So the server does not dial a worker for an address another registered
// since; the worker goes down by its heartbeat timeout, or registers again.
type addrOwners map[string]string

func endpointKey(ep api.Endpoint) string { return ep.Transport + " " + ep.Addr }

// moved records that info.Name now registers info's endpoints, not old's
// (its previous registration, if any).
func (o addrOwners) moved(old, info api.WorkerInfo) {
	o.release(old)
	for _, ep := range info.Endpoints {
		o[endpointKey(ep)] = info.Name
	}
}

// release forgets the endpoints of info that its worker still owns.
func (o addrOwners) release(info api.WorkerInfo) {
	for _, ep := range info.Endpoints {
		if k := endpointKey(ep); o[k] == info.Name {
			delete(o, k)
		}
	}
}

// takenBy returns the worker that registered ep after name did, or "".
func (o addrOwners) takenBy(name string, ep api.Endpoint) string {
	if n := o[endpointKey(ep)]; n != name {
		return n
	}
	return ""
}
