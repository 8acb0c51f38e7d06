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
package srcstat

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Module stats every regular file under root, the module's root directory,
// outside hidden directories (.git and the like). It fails t if root holds
// fewer than a hundred files, which is not the module.
func Module(t testing.TB, root string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != root && strings.HasPrefix(d.Name(), "."):
			return filepath.SkipDir
		case d.Type().IsRegular():
			n++
			_, err = os.Stat(p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("%d files under %s: not the module's root", n, root)
	}
}
