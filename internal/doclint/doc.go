// Package doclint finds references in braid's documentation that point
// nowhere: a relative Markdown link in README.md or docs/ whose file or
// heading does not exist, and a Go comment that names a repository path, a
// .go file or a package that does not exist. Its test runs it over the
// tree, so a rename that leaves a stale reference behind fails `make test`.
//
// It is precise rather than thorough: a Go comment's path is checked only
// when its first element is a top-level directory of the repository (or a
// directory beside the file), a file name only when it ends in .go, and a
// package only where the word package comes just before its name at the
// end of a parenthesis or a sentence, as braid's comments write
// cross-references. Placeholders (DATA/secret, experiments/PATH) and
// patterns (*_frame.go) are left alone.
package doclint

import "fmt"

// Problem is one reference that does not resolve.
type Problem struct {
	File string // relative to the root
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }
