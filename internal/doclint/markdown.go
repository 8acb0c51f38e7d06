package doclint

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// MarkdownFiles returns README.md and every .md file under docs/, relative
// to root.
func MarkdownFiles(root string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("doclint: %w", err)
	}
	return files, nil
}

var (
	fenceRE   = regexp.MustCompile("^\\s*(```|~~~)")
	codeRE    = regexp.MustCompile("`[^`]*`")
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	schemeRE  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// proseLines returns a Markdown document's lines with fenced code blocks
// blanked out, so that neither their links nor their comments count.
func proseLines(md string) []string {
	lines := strings.Split(md, "\n")
	in := false
	for i, l := range lines {
		if fenceRE.MatchString(l) {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return lines
}

// Anchors returns the anchors GitHub gives a document's headings: the
// heading lowercased, without punctuation, spaces turned into hyphens, and
// -1, -2 … after a repeat.
func Anchors(md string) map[string]bool {
	out := map[string]bool{}
	for _, l := range proseLines(md) {
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := Slug(m[1])
		for n := 1; out[a]; n++ {
			a = fmt.Sprintf("%s-%d", Slug(m[1]), n)
		}
		out[a] = true
	}
	return out
}

// Slug is the anchor GitHub makes of a heading's text.
func Slug(heading string) string {
	heading = linkRE.ReplaceAllString(heading, "]") // [text](url) → [text]
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// CheckLinks returns the relative links of the Markdown file at rel (under
// root) whose file does not exist, which leave the repository, or whose
// #anchor names no heading of the Markdown file they point to.
func CheckLinks(root, rel string) ([]Problem, error) {
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return nil, fmt.Errorf("doclint: %w", err)
	}
	var out []Problem
	anchors := map[string]map[string]bool{}
	for i, l := range proseLines(string(b)) {
		l = codeRE.ReplaceAllString(l, "")
		for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
			if msg := checkLink(root, rel, m[1], anchors); msg != "" {
				out = append(out, Problem{File: rel, Line: i + 1, Msg: msg})
			}
		}
	}
	return out, nil
}

// checkLink says what is wrong with one link target, "" if nothing.
func checkLink(root, from, target string, anchors map[string]map[string]bool) string {
	if schemeRE.MatchString(target) || strings.HasPrefix(target, "//") {
		return "" // a URL
	}
	path, anchor, _ := strings.Cut(target, "#")
	to := from
	if path != "" {
		to = filepath.Join(filepath.Dir(from), path)
		if to == ".." || strings.HasPrefix(to, "../") {
			return fmt.Sprintf("link %s leaves the repository", target)
		}
		st, err := os.Stat(filepath.Join(root, to))
		if err != nil {
			return fmt.Sprintf("link %s: no such file", target)
		}
		if st.IsDir() || !strings.HasSuffix(to, ".md") {
			return "" // an anchor into a directory or a non-Markdown file is not checked
		}
	}
	if anchor == "" {
		return ""
	}
	if anchors[to] == nil {
		b, err := os.ReadFile(filepath.Join(root, to))
		if err != nil {
			return fmt.Sprintf("link %s: %v", target, err)
		}
		anchors[to] = Anchors(string(b))
	}
	if !anchors[to][anchor] {
		return fmt.Sprintf("link %s: %s has no heading #%s", target, to, anchor)
	}
	return ""
}
