package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// cliDoc is docs/cli.md, the reference of the braid command.
const cliDoc = "../../docs/cli.md"

// docRow is one row of docs/cli.md's table of commands.
type docRow struct {
	synopsis string // the first column
	name     string // "put", or "bench overhead"
	what     string // the second column
}

// docCommands parses the table of commands in docs/cli.md.
func docCommands(t *testing.T, doc string) []docRow {
	t.Helper()
	_, table, ok := strings.Cut(doc, "| command | what it does |\n|---|---|\n")
	if !ok {
		t.Fatalf("%s has no table of commands", cliDoc)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var rows []docRow
	for _, line := range strings.Split(table, "\n") {
		line = strings.ReplaceAll(line, `\|`, "¦") // an escaped bar is no column
		cols := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cols) != 2 {
			t.Fatalf("%s row %q: want 2 columns", cliDoc, line)
		}
		name, ok := commandName(cols[0])
		if !ok {
			t.Fatalf("%s row %q does not start with `braid COMMAND", cliDoc, line)
		}
		rows = append(rows, docRow{synopsis: cols[0], name: name, what: cols[1]})
	}
	return rows
}

var commandRE = regexp.MustCompile("^`?braid ([a-z-]+)(?: ([a-z]+))?")

// commandName is the command a synopsis starts with: "put", "bench net".
func commandName(synopsis string) (string, bool) {
	m := commandRE.FindStringSubmatch(synopsis)
	if m == nil {
		return "", false
	}
	name := strings.TrimPrefix(m[1], "--")
	if name == "bench" && m[2] != "" {
		name += " " + m[2]
	}
	return name, true
}

// summaries are the one-line descriptions `braid help` and `braid bench
// -h` give.
func summaries() map[string]string {
	out := map[string]string{}
	for name, c := range commands {
		out[name] = c.summary
	}
	for name, c := range benchCommands {
		out["bench "+name] = c.summary
	}
	return out
}

func readCLIDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docs/cli.md's table of commands and the commands' help agree: every
// command has a row and every row a command, each row says what the
// command's own summary says, word for word, and names only flags the
// command has.
func TestCLIDocCommandTable(t *testing.T) {
	want := summaries()
	seen := map[string]bool{}
	for _, r := range docCommands(t, readCLIDoc(t)) {
		summary, ok := want[r.name]
		if !ok {
			t.Errorf("%s lists %q, which is no command", cliDoc, r.name)
			continue
		}
		seen[r.name] = true
		if r.what != summary {
			t.Errorf("%s says braid %s: %q\nhelp says: %q", cliDoc, r.name, r.what, summary)
		}
		checkFlags(t, r.name, r.synopsis)
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("braid %s is not in %s's table of commands", name, cliDoc)
		}
	}
}

// docSynopses maps each command to the synopsis block of its section in
// docs/cli.md: the first fenced block under "### `braid NAME`".
func docSynopses(t *testing.T, doc string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, sec := range strings.Split(doc, "\n### `")[1:] {
		head, body, _ := strings.Cut(sec, "\n")
		name, ok := commandName(strings.TrimSuffix(head, "`"))
		if !ok {
			t.Fatalf("%s: section %q is not of a braid command", cliDoc, head)
		}
		_, block, ok := strings.Cut(body, "```\n")
		if !ok {
			t.Errorf("%s: braid %s's section has no synopsis block", cliDoc, name)
			continue
		}
		block, _, _ = strings.Cut(block, "```")
		out[name] = block
	}
	return out
}

// Every command has a section in docs/cli.md, and every flag its synopsis
// names is in the command's -h.
func TestCLIDocSynopses(t *testing.T) {
	syn := docSynopses(t, readCLIDoc(t))
	for name := range summaries() {
		block, ok := syn[name]
		if !ok {
			t.Errorf("braid %s has no section in %s", name, cliDoc)
			continue
		}
		checkFlags(t, name, block)
	}
}

var flagRE = regexp.MustCompile(`--([a-z][a-z0-9-]*)`) // digits too: --s3-endpoint

// checkFlags checks that each --flag in a synopsis is in the command's -h.
func checkFlags(t *testing.T, name, synopsis string) {
	t.Helper()
	if name == "version" || name == "bench" {
		return // no flags of their own
	}
	_, _, help := runCmd(t, append(strings.Fields(name), "-h")...)
	for _, m := range flagRE.FindAllStringSubmatch(synopsis, -1) {
		if !strings.Contains(help, "\n  -"+m[1]+" ") && !strings.Contains(help, "\n  -"+m[1]+"\n") {
			t.Errorf("%s names braid %s --%s, which its -h does not list", cliDoc, name, m[1])
		}
	}
}
