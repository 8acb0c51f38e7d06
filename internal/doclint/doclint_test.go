package doclint

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const root = "../.."

// TestLinksResolve: every relative link in README.md and docs/ names a file
// that exists, and a heading of it where it names one.
func TestLinksResolve(t *testing.T) {
	files, err := MarkdownFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("only %d Markdown files: %v", len(files), files)
	}
	for _, f := range files {
		ps, err := CheckLinks(root, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			t.Error(p)
		}
	}
}

// stdPackages are the standard library's package names.
func stdPackages(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "std").Output()
	if err != nil {
		t.Fatalf("go list std: %v", err)
	}
	pkgs := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		pkgs[path.Base(p)] = true
	}
	return pkgs
}

// TestCommentsNameWhatExists: no Go comment in the tree names a path, a .go
// file or a package that is not there.
func TestCommentsNameWhatExists(t *testing.T) {
	ps, err := CheckComments(root, stdPackages(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		t.Error(p)
	}
}

// write makes the files of a small tree under dir.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func texts(ps []Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

// TestPlantedBadLinks: the checks find a link to a missing file, to a
// missing heading and out of the repository, and pass the good ones, URLs
// and whatever sits in code.
func TestPlantedBadLinks(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"README.md": "# braid\n\n" +
			"[good](docs/a.md), [good anchor](docs/a.md#the-sctp-transport-hystart), [dir](docs/),\n" +
			"[self](#braid), [url](https://example.org/x.md), ![img](docs/p.svg)\n" +
			"[missing](docs/missing.md)\n" +
			"[bad anchor](docs/a.md#nope)\n" +
			"`[in code](docs/gone.md)`\n" +
			"```\n[in a block](docs/gone.md)\n```\n" +
			"[out](../elsewhere.md)\n",
		"docs/a.md":  "# A\n\n## The sctp transport (HyStart++)\n\n[back](../README.md#braid) [bad self](#b)\n",
		"docs/p.svg": "<svg/>",
	})
	var got []string
	for _, f := range []string{"README.md", "docs/a.md"} {
		ps, err := CheckLinks(dir, f)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, texts(ps)...)
	}
	want := []string{
		"README.md:5: link docs/missing.md: no such file",
		"README.md:6: link docs/a.md#nope: docs/a.md has no heading #nope",
		"README.md:11: link ../elsewhere.md leaves the repository",
		"docs/a.md:5: link #b: docs/a.md has no heading #b",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPlantedBadComments: the checks find a comment naming a missing path,
// .go file and package, and pass the ones that exist, placeholders,
// patterns and "package" as a common noun.
func TestPlantedBadComments(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"transport/tcp/tcp.go":        "package tcp\n",
		"transport/tcp/ui/index.html": "",
		"docs/seeds.md":               "",
		"scheduler/doc.go": "// Package scheduler is tested against transport/tcp and docs/seeds.md,\n" +
			"// beside tcp.go and doc.go, with package tcp. It reads DATA/secret,\n" +
			"// like quic-go's internal/wire/*_frame.go, in (the package constant).\n" +
			"// Splitting happens before the core (package split), see transport/foo\n" +
			"// and missing.go.\n" +
			"package scheduler\n",
		"transport/tcp/more.go": "package tcp\n\n// more serves ui/index.html, not ui/gone.html.\nfunc more() {}\n",
		"third_party/x/x.go":    "// Package x names nothing/real.go and gone.go.\npackage x\n",
	})
	ps, err := CheckComments(dir, map[string]bool{"fmt": true})
	if err != nil {
		t.Fatal(err)
	}
	got := texts(ps)
	want := []string{
		"scheduler/doc.go:4: names transport/foo, which does not exist",
		"scheduler/doc.go:4: names package split, which does not exist",
		"scheduler/doc.go:5: names missing.go, which is no file of the repository",
		"transport/tcp/more.go:3: names transport/tcp/ui/gone.html, which does not exist",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Slow start in sctp (HyStart++)":         "slow-start-in-sctp-hystart",
		"ptcp's stripes, tuned":                  "ptcps-stripes-tuned",
		"`braid put`":                            "braid-put",
		"Windows and byte budgets":               "windows-and-byte-budgets",
		"The seeds' claims beside ours":          "the-seeds-claims-beside-ours",
		"Through the whole system, on loopback":  "through-the-whole-system-on-loopback",
		"Second round: packet size":              "second-round-packet-size",
		"[a link](x.md) in a heading, 1 × 2 = 2": "a-link-in-a-heading-1--2--2",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

// TestAnchorsRepeat: a repeated heading gets -1, -2, as on GitHub.
func TestAnchorsRepeat(t *testing.T) {
	a := Anchors("# A\n\n## Notes\n\n```\n## not a heading\n```\n\n## Notes\n\n## Notes\n")
	for _, want := range []string{"a", "notes", "notes-1", "notes-2"} {
		if !a[want] {
			t.Errorf("no anchor %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("a heading inside a code block counted")
	}
}
