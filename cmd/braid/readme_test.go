package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// readmeRow is one row of the README's command table.
type readmeRow struct {
	synopsis string // the first column, back-quotes and all
	name     string // "put", or "bench overhead"
	what     string // the second column
}

// readmeCommands parses the README's table of commands.
func readmeCommands(t *testing.T) []readmeRow {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| command | what it does |\n|---|---|\n")
	if !ok {
		t.Fatal("README.md has no table of commands")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	first := regexp.MustCompile("^`braid ([a-z-]+)(?: ([a-z]+))?")
	var rows []readmeRow
	for _, line := range strings.Split(table, "\n") {
		line = strings.ReplaceAll(line, `\|`, "¦") // an escaped bar is no column
		cols := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cols) != 2 {
			t.Fatalf("README row %q: want 2 columns", line)
		}
		m := first.FindStringSubmatch(cols[0])
		if m == nil {
			t.Fatalf("README row %q does not start with `braid COMMAND", line)
		}
		name := m[1]
		if name == "bench" && m[2] != "" {
			name += " " + m[2]
		}
		rows = append(rows, readmeRow{synopsis: cols[0], name: strings.TrimPrefix(name, "--"), what: cols[1]})
	}
	return rows
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

// The README's table of commands and the commands' help agree: every
// command has a row and every row a command; each row's description starts
// with the command's summary as help gives it (then, after ". ", more);
// every flag the row names is one of the command's.
func TestReadmeCommandTable(t *testing.T) {
	want := summaries()
	seen := map[string]bool{}
	for _, r := range readmeCommands(t) {
		summary, ok := want[r.name]
		if !ok {
			t.Errorf("README lists %q, which is no command", r.name)
			continue
		}
		seen[r.name] = true
		if r.what != summary && !strings.HasPrefix(r.what, summary+". ") {
			t.Errorf("README says braid %s: %q\nhelp says: %q", r.name, r.what, summary)
		}
		checkFlags(t, r)
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("braid %s is not in the README's table of commands", name)
		}
	}
}

// checkFlags checks that each --flag in a README row's synopsis is in the
// command's -h.
func checkFlags(t *testing.T, r readmeRow) {
	if r.name == "version" || r.name == "bench" {
		return // no flags
	}
	_, _, help := runCmd(t, append(strings.Fields(r.name), "-h")...)
	for _, m := range regexp.MustCompile(`--([a-z][a-z-]*)`).FindAllStringSubmatch(r.synopsis, -1) {
		if !strings.Contains(help, "\n  -"+m[1]+" ") && !strings.Contains(help, "\n  -"+m[1]+"\n") {
			t.Errorf("README names braid %s --%s, which its -h does not list", r.name, m[1])
		}
	}
}
