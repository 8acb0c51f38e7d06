package version

import (
	"runtime/debug"
	"testing"
)

func TestStringPrefersTheLinkedVersion(t *testing.T) {
	if String() == "" {
		t.Fatal("empty version")
	}
	Version = "v9.9.9"
	defer func() { Version = "" }()
	if got := compute(); got != "v9.9.9" {
		t.Errorf("version %q, want the linked v9.9.9", got)
	}
}

// A binary built by go build in a clone says its commit, once, with
// -dirty for a tree with changes; a tagged one its tag.
func TestFromBuildInfo(t *testing.T) {
	const rev = "9f0601bfdaa011a285d2e854e1c1b903a96909f9"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	cases := []struct {
		main     string
		settings []debug.BuildSetting
		want     string
	}{
		{"v0.0.0-20261129013637-9f0601bfdaa0", vcs("false"), "9f0601bfdaa0"},
		{"v0.0.0-20261129013637-9f0601bfdaa0+dirty", vcs("true"), "9f0601bfdaa0-dirty"},
		{"v0.3.1-0.20261129013637-9f0601bfdaa0", vcs("false"), "9f0601bfdaa0"},
		{"(devel)", vcs("true"), "9f0601bfdaa0-dirty"},
		{"v0.3.0", vcs("false"), "v0.3.0"},
		{"v0.3.0+dirty", vcs("true"), "v0.3.0+dirty"},
		{"(devel)", nil, "devel"},
		{"", nil, "devel"},
	}
	for _, tc := range cases {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/braidhq/braid", Version: tc.main}, Settings: tc.settings}
		if got := fromBuildInfo(bi); got != tc.want {
			t.Errorf("main %q: version %q, want %q", tc.main, got, tc.want)
		}
	}
}
