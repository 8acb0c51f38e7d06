// Package layering checks how braid's packages stand on one another.
//
// Every package of the module sits on one floor, and imports only packages
// on its own floor or below: an import from a lower floor to a higher one
// fails TestFloors. The floors, bottom first (the table below is the
// authority; a package is on the floor of the longest entry that names it
// or a parent of it, and a package no entry names fails the test):
//
//	base         vocabulary, codecs and tools: api, version, wire, store
//	             (objects), netem and netem/relay (instruments: the WAN bed
//	             and the fault relay), the internal/* helpers but the two
//	             placed higher below
//	core         logic and persistence without networking: ops, scheduler,
//	             userop, server/statedb
//	transport    the data plane: transport and its implementations,
//	             transport/transporttest, internal/transports (by name)
//	nodes        the processes' libraries: client, server, worker,
//	             internal/metrics
//	system       the whole system in one process: cluster
//	instruments  benchmarks and end-to-end tests: bench/*, e2e
//	commands     programs: cmd/*, examples/*, vm/*
//
// Within a floor some packages must still stay apart; TestImportRules
// checks these (direct imports, standard library included):
//   - transports never import the scheduler, the server, the worker,
//     operations or the client;
//   - operations and the user-operation sandbox never import networking
//     (the sandbox's Fetcher is injected);
//   - the scheduler core does no I/O: no net, os, io/fs or os/exec;
//   - wire codecs touch neither the network nor files;
//   - the client library stays light: no sandbox, server, worker,
//     transport, nor their heavy dependencies (wazero, bbolt, quic-go);
//   - state.db's package knows nothing of networking or scheduling.
//
// TestInstrumentsStayOut keeps test beds and test helpers out of the
// product: netem, netem/relay, transport/transporttest and the other
// helpers named in support are imported only by each other, by
// instruments and by commands (cmd/braid's `braid net` runs the bed).
//
// Only the packages' own files are checked, not their tests: an external
// test package (package x_test) stands above the package it tests and may
// import anything, as server's tests start a whole cluster.
package layering

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/braidhq/braid/"

// floor is a floor's name and its packages by path in the module (an
// entry also covers the packages below its directory).
type floor struct {
	name string
	pkgs []string
}

// floors, bottom first.
var floors = []floor{
	{"base", []string{"api", "version", "wire", "store", "netem", "internal"}},
	{"core", []string{"ops", "scheduler", "userop", "server/statedb"}},
	{"transport", []string{"transport", "internal/transports"}},
	{"nodes", []string{"client", "server", "worker", "internal/metrics"}},
	{"system", []string{"cluster"}},
	{"instruments", []string{"bench", "e2e"}},
	{"commands", []string{"cmd", "examples", "vm"}},
}

// rules: packages under a prefix must not import (directly) any of these
// (a package or its subpackages; module paths relative to the module).
var rules = []struct {
	prefix    string
	forbidden []string
}{
	{"transport", []string{"server", "scheduler", "worker", "ops", "client"}},
	{"ops", []string{"net", "net/http", "transport", "server", "worker"}},
	{"scheduler", []string{"net", "net/http", "os", "io/fs", "os/exec", "transport", "server"}},
	{"wire", []string{"net", "os", "server", "worker"}},
	{"userop", []string{"net", "net/http", "transport", "server", "worker", "client"}},
	{"client", []string{"userop", "server", "worker", "transport", "internal/transports",
		"github.com/tetratelabs/wazero", "go.etcd.io/bbolt", "github.com/quic-go/quic-go"}},
	{"server/statedb", []string{"net", "net/http", "transport", "scheduler"}},
}

// support are test beds and test helpers: never imported by the product.
var support = []string{"netem", "transport/transporttest", "internal/testlog", "internal/testport", "store/s3/s3test", "userop/wasmtest", "scheduler/schedsim"}

// TestFloors: no package imports one on a higher floor, every package is
// on a floor, and every entry of the table names a package.
func TestFloors(t *testing.T) {
	pkgs := modulePackages(t)
	used := map[string]bool{}
	for _, p := range pkgs {
		f, entry := floorOf(p.path)
		if f < 0 {
			t.Errorf("%s is on no floor: add it to the table in layering_test.go", p.path)
			continue
		}
		used[entry] = true
		for _, imp := range p.imports {
			if g, _ := floorOf(imp); g > f {
				t.Errorf("%s (floor %s) imports %s (floor %s): an import from a lower floor to a higher one",
					p.path, floors[f].name, imp, floors[g].name)
			}
		}
	}
	for _, fl := range floors {
		for _, entry := range fl.pkgs {
			if !used[entry] {
				t.Errorf("floor %s names %s, which holds no package", fl.name, entry)
			}
		}
	}
}

// TestImportRules: the packages under each rule's prefix import none of
// its forbidden packages.
func TestImportRules(t *testing.T) {
	checked := 0
	for _, p := range modulePackages(t) {
		for _, r := range rules {
			if !under(p.path, r.prefix) {
				continue
			}
			checked++
			for _, imp := range p.all {
				for _, bad := range r.forbidden {
					if under(strings.TrimPrefix(imp, module), bad) {
						t.Errorf("%s imports %s, which its layer must not", p.path, imp)
					}
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d packages checked; is go list seeing the module?", checked)
	}
}

// TestInstrumentsStayOut: support packages are imported only by support,
// instruments and commands.
func TestInstrumentsStayOut(t *testing.T) {
	instruments := slices.IndexFunc(floors, func(f floor) bool { return f.name == "instruments" })
	for _, p := range modulePackages(t) {
		if f, _ := floorOf(p.path); f >= instruments || isSupport(p.path) {
			continue
		}
		for _, imp := range p.imports {
			if isSupport(imp) {
				t.Errorf("%s imports %s, a test bed or test helper: the product must not", p.path, imp)
			}
		}
	}
}

// pkg is a package of the module: its path and its imports, relative to
// the module (imports), and all its imports as go list gives them (all).
type pkg struct {
	path    string
	imports []string
	all     []string
}

func modulePackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		p := pkg{path: strings.TrimPrefix(fields[0], module), all: fields[1:]}
		for _, imp := range fields[1:] {
			if rel, ok := strings.CutPrefix(imp, module); ok {
				p.imports = append(p.imports, rel)
			}
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; is it seeing the module?", len(pkgs))
	}
	return pkgs
}

// floorOf is the index of path's floor and the entry that put it there
// (the longest that covers it), or -1.
func floorOf(path string) (int, string) {
	f, best := -1, ""
	for i, fl := range floors {
		for _, entry := range fl.pkgs {
			if under(path, entry) && len(entry) > len(best) {
				f, best = i, entry
			}
		}
	}
	return f, best
}

func isSupport(path string) bool {
	return slices.ContainsFunc(support, func(s string) bool { return under(path, s) })
}

// under reports whether path is dir or below it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// TestFloorOf pins the lookup the tests rely on: the longest entry wins.
func TestFloorOf(t *testing.T) {
	for path, want := range map[string]string{
		"server":              "nodes",
		"server/statedb":      "core",
		"internal/fileutil":   "base",
		"internal/transports": "transport",
		"internal/metrics":    "nodes",
		"netem/relay":         "base",
		"bench/tperf":         "instruments",
		"transportx":          "",
	} {
		f, _ := floorOf(path)
		got := ""
		if f >= 0 {
			got = floors[f].name
		}
		if got != want {
			t.Errorf("floorOf(%s) = %q, want %q", path, got, want)
		}
	}
}
