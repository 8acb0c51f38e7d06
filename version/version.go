// Package version says which braid this is: the -ldflags value when the
// build set one (make build does), else the module version and VCS
// revision Go recorded in the binary.
package version

import (
	"runtime/debug"
	"sync"
)

// Version is set at link time: -ldflags "-X github.com/braidhq/braid/version.Version=v1.2.3".
var Version string

var computed = sync.OnceValue(compute)

func compute() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev != "" {
		v += "+" + rev[:min(12, len(rev))] + dirty
	}
	return v
}

// String returns braid's version, e.g. "v0.3.0" or "devel+1a2b3c4d5e6f".
func String() string { return computed() }
