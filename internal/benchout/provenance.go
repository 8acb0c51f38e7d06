package benchout

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/braidhq/braid/version"
)

// Provenance says what produced a results file: the code, the kernel and
// the Go toolchain that ran it, and the command line. Every results.json
// (and the paper's run.json) carries one, so a reader can tell which build
// a number belongs to.
type Provenance struct {
	// Commit is the VCS revision the binary was built from, with
	// "-dirty" when its tree had changes; "unknown" when the binary does
	// not say (go run, go test, a build outside git).
	Commit string `json:"commit"`
	// Kernel is the running kernel's release (uname -r), "unknown" where
	// it cannot be read.
	Kernel string `json:"kernel"`
	// Go is the toolchain's version, as runtime.Version gives it.
	Go string `json:"go"`
	// Flags is the command line after the program's name.
	Flags []string `json:"flags"`
	// Note says how the fields were found when not by the run itself.
	Note string `json:"note,omitempty"`
}

// Unknown is the value used in place of a provenance that is not known.
const Unknown = "unknown"

// Here is the provenance of the running process.
func Here() Provenance {
	var settings []debug.BuildSetting
	if bi, ok := debug.ReadBuildInfo(); ok {
		settings = bi.Settings
	}
	return Provenance{Commit: commitOf(settings, version.Version), Kernel: kernel(), Go: runtime.Version(),
		Flags: append([]string{}, os.Args[1:]...)}
}

// Unrecorded stands for a results file written before results files
// recorded their provenance.
func Unrecorded() *Provenance {
	return &Provenance{Commit: Unknown, Kernel: Unknown, Go: Unknown,
		Note: "written before results files recorded their provenance"}
}

// commitOf is the commit a binary says it was built from: the revision Go
// recorded from VCS, else the version set at link time (make build's `git
// describe --always --dirty`), else Unknown.
func commitOf(settings []debug.BuildSetting, linked string) string {
	var rev string
	dirty := false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	switch {
	case rev != "" && dirty:
		return rev + "-dirty"
	case rev != "":
		return rev
	case linked != "":
		return linked
	}
	return Unknown
}

// kernel is the running kernel's release, Unknown where /proc does not
// say (systems other than Linux).
func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return Unknown
	}
	return strings.TrimSpace(string(b))
}
