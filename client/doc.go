// Package client is the Go client of braid's HTTP control plane: upload and
// download objects, submit jobs, watch and wait for them, list workers.
//
// Errors from the server come back as *api.Error, whose Code is stable:
//
//	var ae *api.Error
//	if errors.As(err, &ae) && ae.Code == api.CodeUnknownOp { ... }
package client
