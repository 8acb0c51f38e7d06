package version

import "testing"

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
