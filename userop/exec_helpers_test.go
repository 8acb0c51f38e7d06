//go:build linux

package userop_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/braidhq/braid/userop"
	"github.com/braidhq/braid/userop/sandbox"
)

// newExecRuntime is a runtime that runs scripts of the interpreters in
// interp, each unit in a sandbox of its own (which needs root).
func newExecRuntime(t *testing.T, st *store, interp map[string]string) *userop.Runtime {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("scripts run in a sandbox, which needs root")
	}
	return newRuntime(t, userop.Config{Fetch: st.fetch, Exec: interp})
}

// unitUID reports whether s is a user id a unit may run as.
func unitUID(s string) bool {
	n, err := strconv.ParseUint(s, 10, 32)
	return err == nil && n >= sandbox.DefaultFirstUID && n < sandbox.DefaultFirstUID+sandbox.DefaultUIDs
}
