// Package layering checks the import rules that keep braid's layers apart
// (STYLE.md): transports never import the scheduler or the server,
// operations and the user-operation sandbox never import networking, the
// client library stays light, and the scheduler core does no I/O.
package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/braidhq/braid/"

// rules: packages under a prefix must not import (directly) any of these.
var rules = []struct {
	prefix    string
	forbidden []string
}{
	{"transport", []string{module + "server", module + "scheduler", module + "worker", module + "ops", module + "client"}},
	{"ops", []string{"net", "net/http", module + "transport", module + "server", module + "worker"}},
	{"scheduler", []string{"net", "net/http", "os", "io/fs", "os/exec", module + "transport", module + "server"}},
	{"wire", []string{"net", "os", module + "server", module + "worker"}},
	// The sandbox fetches nothing itself (its Fetcher is injected), and
	// the client library stays free of the WebAssembly runtime.
	{"userop", []string{"net", "net/http", module + "transport", module + "server", module + "worker", module + "client"}},
	{"client", []string{module + "userop", module + "server", module + "worker"}},
}

func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		for _, r := range rules {
			if pkg != r.prefix && !strings.HasPrefix(pkg, r.prefix+"/") {
				continue
			}
			checked++
			for _, imp := range fields[1:] {
				for _, bad := range r.forbidden {
					if imp == bad || strings.HasPrefix(imp, bad+"/") {
						t.Errorf("%s imports %s, which its layer must not", pkg, imp)
					}
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d packages checked; is go list seeing the module?", checked)
	}
}
