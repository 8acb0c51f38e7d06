package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// newFlagSet returns a flag set whose -h prints the command's usage line
// and flags on stderr; parse errors are left to parseArgs to report.
func newFlagSet(name, synopsis string, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet("braid "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: braid %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses a command that takes flags and no other argument; a stray
// argument is an error that names it.
func parse(fs *flag.FlagSet, args []string) error {
	return parseArgs(fs, args, 0)
}

// parseArgs parses flags, which may come before or after positional
// arguments (`braid get ID -o FILE`), and allows at most max positional
// arguments (-1: any number). The caller checks for too few. -h prints
// the usage and returns flag.ErrHelp; any other mistake is a one-line
// usage error that says what is wrong and where the flags are listed.
func parseArgs(fs *flag.FlagSet, args []string, max int) error {
	if err := emptyValue(fs, args); err != nil {
		return err
	}
	var pos []string
	for {
		if err := quietParse(fs, args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if max >= 0 && len(pos) > max {
		return strayArgument(fs, pos[max])
	}
	return fs.Parse(append([]string{"--"}, pos...))
}

// quietParse is fs.Parse without the flag package's own error message and
// usage dump: -h prints the usage, and an error comes back as a usage
// error of one line.
func quietParse(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	case err != nil:
		return flagError(fs, err)
	}
	return nil
}

// flagError rewords an error of the flag package: flags with two dashes,
// as the help shows them, the nearest flag for one the command does not
// have, and the pointer to the command's -h.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = fmt.Sprintf("unknown flag --%s", name)
		if near := nearest(name, flagNames(fs)); near != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", near)
		}
	} else if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		msg = fmt.Sprintf("--%s needs a value", name)
	} else {
		msg = strings.Replace(msg, "for flag -", "for --", 1)
	}
	return usageErrorf("%s; run '%s -h' for its flags", msg, fs.Name())
}

// flagNames are the names of fs's flags.
func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// emptyValue refuses a flag whose value is the next flag, which is what
// `--input $ID --repeat 9` becomes when $ID is empty: the flag is named
// as empty rather than the flag after it taken for its value.
func emptyValue(fs *flag.FlagSet, args []string) error {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--" {
			return nil
		}
		f := flagArg(fs, args[i])
		if f == nil || isBoolFlag(f) {
			continue
		}
		if next := flagArg(fs, args[i+1]); next != nil {
			return usageErrorf("--%s is empty: it is followed by --%s (is a variable that should hold its value empty?)", f.Name, next.Name)
		}
		i++ // the value
	}
	return nil
}

// flagArg is the flag of fs that arg names without a value ("-x", "--x"),
// or nil.
func flagArg(fs *flag.FlagSet, arg string) *flag.Flag {
	name, ok := strings.CutPrefix(arg, "-")
	if !ok {
		return nil
	}
	name = strings.TrimPrefix(name, "-")
	if name == "" || strings.Contains(name, "=") {
		return nil
	}
	return fs.Lookup(name)
}

// isBoolFlag reports whether f takes no value (--wait, --json).
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// strayArgument is the usage error for an argument the command does not
// take; a key=value where --param would take it says so.
func strayArgument(fs *flag.FlagSet, arg string) error {
	msg := fmt.Sprintf("unexpected argument %q", arg)
	if k, _, ok := strings.Cut(arg, "="); ok && k != "" && fs.Lookup("param") != nil {
		msg += fmt.Sprintf(" (did you mean --param %s?)", arg)
	}
	return usageErrorf("%s; run '%s -h' for its flags", msg, fs.Name())
}
