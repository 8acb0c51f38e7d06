// Package client is the Go client of braid's HTTP control plane: upload and
// download objects, submit jobs, watch and wait for them, delete them, list
// workers.
//
// Errors from the server come back as *api.Error, whose Code is stable:
//
//	var ae *api.Error
//	if errors.As(err, &ae) && ae.Code == api.CodeUnknownOp { ... }
//
// # Riding through restarts
//
// A server that restarts is away for a moment: connections are refused or
// cut, or it answers 503 while it shuts down. A Client rides through that:
// it makes the call again after a wait that starts near 100 ms and doubles
// up to 2 s, with jitter, for as long as its Retry policy allows (30 s by
// default) and the call's context lasts. It repeats only what is safe to
// repeat:
//
//   - A call whose connection could not be made is made again whatever it
//     is, since nothing of it was sent. Put's body must be readable again
//     (see Put). So is a call a braid server refused because it is
//     stopping (503 with code unavailable): it refuses before acting.
//   - A GET whose connection broke before the answer was whole, or that was
//     answered 502, 503 or 504 by a proxy, is made again; a POST, PUT or
//     DELETE is not,
//     since the server may have acted on it (Submit, Put, Cancel, the
//     deletes and the worker-registry calls).
//   - An answer that is an error, such as a 404 for a job the server does
//     not know, is returned at once.
//
// Wait keeps long-polling, and its event stream reconnects and resumes,
// across any number of restarts, each outage bounded as above: a caller
// that started waiting before a server crashed gets the job's result once
// the restarted server finishes it.
//
//	c := client.New("http://server:7070").WithRetry(client.Retry{
//		For:    time.Minute,
//		Notify: func(err error, wait time.Duration) { log.Printf("%v; retrying in %v", err, wait) },
//	})
//
// WithRetry(client.Retry{For: -1}) turns retrying off, for callers with a
// retry loop of their own, as braid's worker has for its heartbeats.
package client
