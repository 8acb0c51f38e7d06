//go:build !linux

package sandbox

import "context"

// Sandbox runs programs each in a world of its own; on this platform it
// cannot.
type Sandbox struct{}

// New says that units cannot be sandboxed here.
func New(Config) (*Sandbox, error) { return nil, ErrUnsupported }

// Run fails: New never returns a Sandbox here.
func (*Sandbox) Run(context.Context, Spec) (Result, error) { return Result{}, ErrUnsupported }
