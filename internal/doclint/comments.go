package doclint

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// tree is what a Go comment may name: the repository's top-level
// directories, every file's base name, and every package name.
type tree struct {
	root  string
	top   map[string]bool
	bases map[string]bool
	pkgs  map[string]bool
	gos   []string // the Go files whose comments are checked, relative to root
}

func scan(root string, knownPkgs map[string]bool) (*tree, error) {
	t := &tree{root: root, top: map[string]bool{}, bases: map[string]bool{}, pkgs: map[string]bool{}}
	for p := range knownPkgs {
		t.pkgs[p] = true
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("doclint: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			t.top[e.Name()] = true
		}
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		t.bases[d.Name()] = true
		if !strings.HasSuffix(rel, ".go") {
			return nil
		}
		if name, ok := packageName(path); ok {
			t.pkgs[name] = true
		}
		if !checked(rel) {
			return nil
		}
		t.gos = append(t.gos, rel)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("doclint: %w", err)
	}
	return t, nil
}

// checked says whether the comments of the Go file at rel are checked.
func checked(rel string) bool {
	for dir := filepath.Dir(rel); dir != "."; dir = filepath.Dir(dir) {
		base := filepath.Base(dir)
		if dir == "third_party" || base == "testdata" || strings.HasPrefix(base, ".") {
			return false
		}
	}
	return true
}

var packageRE = regexp.MustCompile(`(?m)^package ([a-z][a-z0-9_]*)`)

// packageName reads a Go file's package clause (without the _test of an
// external test package).
func packageName(path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	m := packageRE.FindSubmatch(b)
	if m == nil {
		return "", false
	}
	return strings.TrimSuffix(string(m[1]), "_test"), true
}

var (
	// A repository path: lower-case first element, one or more more.
	pathRE = regexp.MustCompile("(?:^|[\\s(`\"'])([a-z][a-z0-9_-]*(?:/[A-Za-z0-9_.*{}…-]+)+)")
	// A bare Go file name (one with a directory is a path).
	goFileRE = regexp.MustCompile("(?:^|[\\s(`\"'])([a-z0-9_]+\\.go)\\b")
	// A cross-reference to a package: the word package, then its name at
	// the end of a parenthesis or a sentence; the word before it is kept.
	pkgRefRE = regexp.MustCompile(`([\w']+)?\s*\bpackage ([a-z][a-z0-9]*)(?:[).,;:]|'s|$)`)
	// An upper-case placeholder element: DATA, PATH, DIR.
	placeholderRE = regexp.MustCompile(`^[A-Z]{2,}$`)
)

// determiners before "package" make it a common noun, not a reference:
// "the package constant". A possessive does too: "the library's package
// names".
var determiners = map[string]bool{"the": true, "this": true, "a": true, "that": true, "its": true,
	"each": true, "every": true, "one": true, "same": true, "own": true, "whole": true}

// CheckComments returns the comments in the Go files under root (third_party,
// testdata and hidden directories left out) that name a path, a .go file or
// a package that does not exist. knownPkgs adds package names from outside
// the tree, the standard library's.
func CheckComments(root string, knownPkgs map[string]bool) ([]Problem, error) {
	t, err := scan(root, knownPkgs)
	if err != nil {
		return nil, err
	}
	var out []Problem
	for _, rel := range t.gos {
		ps, err := t.checkFile(rel)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

func (t *tree) checkFile(rel string) ([]Problem, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(t.root, rel), nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("doclint: %w", err)
	}
	var out []Problem
	for _, g := range f.Comments {
		for _, c := range g.List {
			line := fset.Position(c.Slash).Line
			for i, text := range strings.Split(c.Text, "\n") {
				for _, msg := range t.checkText(filepath.Dir(rel), text) {
					out = append(out, Problem{File: rel, Line: line + i, Msg: msg})
				}
			}
		}
	}
	return out, nil
}

// checkText checks one line of a comment in directory dir.
func (t *tree) checkText(dir, text string) []string {
	var out []string
	for _, m := range pathRE.FindAllStringSubmatch(text, -1) {
		if msg := t.checkPath(dir, strings.TrimRight(m[1], ".,:;)'`\"")); msg != "" {
			out = append(out, msg)
		}
	}
	for _, m := range goFileRE.FindAllStringSubmatch(text, -1) {
		if _, err := os.Stat(filepath.Join(t.root, dir, m[1])); err != nil && !t.bases[m[1]] {
			out = append(out, fmt.Sprintf("names %s, which is no file of the repository", m[1]))
		}
	}
	for _, m := range pkgRefRE.FindAllStringSubmatch(text, -1) {
		before := strings.ToLower(m[1])
		if !determiners[before] && !strings.HasSuffix(before, "'s") && !t.pkgs[m[2]] {
			out = append(out, fmt.Sprintf("names package %s, which does not exist", m[2]))
		}
	}
	return out
}

// checkPath says what is wrong with a path a comment in dir names, "" if
// nothing or if it is not one this package can check.
func (t *tree) checkPath(dir, p string) string {
	if strings.ContainsAny(p, "*{}…") {
		return "" // a pattern
	}
	elems := strings.Split(p, "/")
	base := ""
	switch {
	case t.top[elems[0]]:
	case isDir(filepath.Join(t.root, dir, elems[0])):
		base = dir
	default:
		return "" // not a path of this repository, or not one we can tell
	}
	if _, err := os.Stat(filepath.Join(t.root, base, p)); err == nil {
		return ""
	}
	for _, e := range elems {
		if placeholderRE.MatchString(e) {
			return ""
		}
	}
	return fmt.Sprintf("names %s, which does not exist", filepath.Join(base, p))
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
