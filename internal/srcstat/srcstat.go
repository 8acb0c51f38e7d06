// Package srcstat ties a test that runs a braid binary built from the
// module's sources to those sources in go test's cache.
//
// go test reuses a package's cached result while the package's own inputs
// and the files its tests opened or statted are unchanged. A test that
// builds cmd/braid with `go build` and runs it depends on every source file
// of the module, but the cache sees none of them: a change to a transport
// would leave a cached pass of such a package standing. Calling Module from
// a test (not TestMain: files are recorded only from the first test on)
// records them all.
//
// go test checks the recorded files when the run ends, so a file changed
// while the binary's tests ran would have the pass recorded against the
// new sources. TestMain therefore calls Watch before it builds the binary,
// which fails the run if the fingerprint differs after (a failed run is not
// cached).
package srcstat

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Module stats the files under root, the module's root directory, that the
// binary may be built from (see Fingerprint). It fails t if root holds fewer
// than a hundred, which is not the module.
func Module(t testing.TB, root string) {
	t.Helper()
	if _, err := Fingerprint(root); err != nil {
		t.Fatal(err)
	}
}

// Watch takes root's Fingerprint, exiting the process if it cannot, and
// returns the function to pass m.Run's code through: it returns 1 with a
// message if the fingerprint has changed since, else the code.
func Watch(root string) func(code int) int {
	before, err := Fingerprint(root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "reading the module's files: %v\n", err)
		os.Exit(1)
	}
	return func(code int) int {
		if now, err := Fingerprint(root); err != nil || now != before {
			fmt.Fprintln(os.Stderr, "the module's files changed while the tests ran a binary built before: run them again")
			return 1
		}
		return code
	}
}

// Fingerprint stats the regular files under root that the binary may be
// built from and returns a digest of their names, sizes and modification
// times. It leaves out what no build reads, so that editing the docs while
// the tests run does not fail them: hidden directories (.git and the like),
// docs and testdata directories, Markdown files and Go test files. It fails
// if root holds fewer than a hundred files, which is not the module.
func Fingerprint(root string) (string, error) {
	h := sha256.New()
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "docs" || d.Name() == "testdata"):
			return filepath.SkipDir
		case d.Type().IsRegular() && !strings.HasSuffix(p, ".md") && !strings.HasSuffix(p, "_test.go"):
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n++
			fmt.Fprintf(h, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if n < 100 {
		return "", fmt.Errorf("%d files under %s: not the module's root", n, root)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
