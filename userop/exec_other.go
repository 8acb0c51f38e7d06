//go:build !linux

package userop

import (
	"context"
	"errors"
)

func (r *Runtime) runExec(context.Context, string, [32]byte, Invocation, []byte) ([]byte, error) {
	return nil, errors.New("scripts run on Linux workers only")
}
