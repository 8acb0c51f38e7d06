// Package version says which braid this is: the -ldflags value when the
// build set one (make build does), else what Go recorded in the binary of
// the commit it was built from (go build and go install in a clone do).
package version

import (
	"regexp"
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
	return fromBuildInfo(bi)
}

// pseudoRE matches a pseudo-version, which Go gives a build from a commit
// no tag names: v0.0.0-20261129013637-9f0601bfdaa0.
var pseudoRE = regexp.MustCompile(`-(?:0\.)?\d{14}-[0-9a-f]{12}(\+dirty)?$`)

// fromBuildInfo is the version of a binary built as bi says: the module's
// version if a tag names it ("v1.2.3", "v1.2.3+dirty"), else the commit
// ("9f0601bfdaa0", "9f0601bfdaa0-dirty" if the tree had changes), else
// "devel" (built without VCS information: -buildvcs=false, or in a git
// worktree, where Go finds none).
func fromBuildInfo(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v != "" && v != "(devel)" && !pseudoRE.MatchString(v) {
		return v
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
	if rev == "" {
		return "devel"
	}
	return rev[:min(12, len(rev))] + dirty
}

// String returns braid's version, e.g. "v0.3.0" or "9f0601bfdaa0-dirty".
func String() string { return computed() }
