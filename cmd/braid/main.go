// Command braid is the one binary of the braid batch-compute cluster: the
// server, the worker, the client commands, the demo and the benchmarks.
//
// Run `braid help` for the list of commands and `braid COMMAND -h` for each
// command's flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/version"
)

// command is one subcommand; run gets the arguments after its name.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, env *env) error
}

// env is what a command may touch besides its flags.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// json, once a client command parsed its flags, is its --json: its
	// errors are JSON too.
	json *bool
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"server":  {"run a server: control API, object store, scheduler", runServer},
		"worker":  {"run a worker that registers with servers and runs units", runWorker},
		"put":     {"upload a file; prints its object id", runPut},
		"delete":  {"delete objects, or finished jobs with --job", runDelete},
		"get":     {"download an object, or a job's result with --job", runGet},
		"submit":  {"submit a job; prints its id", runSubmit},
		"status":  {"show a job's status", runStatus},
		"wait":    {"wait for a job to finish, riding through server restarts; a progress bar on a terminal", runWait},
		"cancel":  {"cancel a job", runCancel},
		"jobs":    {"list jobs", runJobs},
		"workers": {"list registered workers, or remove down ones with rm", runWorkers},
		"ops":     {"list the operations catalogue", runOps},
		"op":      {"add or remove user operations (WebAssembly modules)", runOp},
		"token":   {"make, list and revoke the tokens clients show the server (admin)", runToken},
		"demo":    {"start a server and two workers on loopback and run sample jobs", runDemo},
		"bench":   {"run benchmarks: overhead, transport, net, paper, soak, chaos, feedback", runBench},
		"net":     {"a WAN test bed: two namespaces joined by an emulated link (up, down, status; root)", runNet},
		"version": {"print braid's version", runVersion},
	}
}

// errUsage marks errors the flag package already explained.
var errUsage = errors.New("usage")

// errInterrupted is a command the user stopped with Ctrl-C (or SIGTERM).
var errInterrupted = errors.New("interrupted")

// defaultGCPercent trades memory for CPU: braid's live heap is small (unit
// buffers come and go), and collecting less often measured 15-25% more units/s
// in `braid bench overhead` (GOGC=400 vs 100, interleaved runs). $GOGC
// overrides it.
const defaultGCPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // the first signal starts a graceful stop; a second one kills at once
	}()
	os.Exit(run(ctx, os.Args[1:], &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}))
}

// run dispatches to a subcommand and maps its error to an exit code: 0 ok,
// 1 failure, 2 bad usage, 130 interrupted (as a shell reports Ctrl-C).
func run(ctx context.Context, args []string, e *env) int {
	if len(args) == 0 {
		usage(e.stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "--help":
		usage(e.stdout)
		return 0
	case "-version", "--version":
		args[0] = "version"
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "braid: unknown command %q\n\n", args[0])
		usage(e.stderr)
		return 2
	}
	err := cmd.run(ctx, args[1:], e)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = errInterrupted // Ctrl-C: say so, not "context canceled"
	}
	var ue *usageError
	if errors.Is(err, errUsage) && !errors.As(err, &ue) {
		return 2 // the flag package said why
	}
	report(e, args[0], err)
	return exitCode(err)
}

// exitCode is the exit code of a command that failed with err.
func exitCode(err error) int {
	switch {
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, errInterrupted):
		return 130
	}
	return 1
}

// report prints a command's error on stderr: `braid CMD: message`, or with
// --json an object {"error": message, "code": code}.
func report(e *env, name string, err error) {
	msg := err.Error()
	if e.json != nil && *e.json {
		enc := json.NewEncoder(e.stderr)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(struct {
			Error string `json:"error"`
			Code  string `json:"code"`
		}{msg, errorCode(err)})
		return
	}
	// Packages name themselves in their errors ("server: window 40: ..."):
	// say it once.
	msg = strings.TrimPrefix(msg, name+": ")
	fmt.Fprintf(e.stderr, "braid %s: %s\n", name, msg)
}

// errorCode is the machine-readable code of a command's error: the
// server's api.Error code when the server refused, else one of braid's own.
func errorCode(err error) string {
	var ae *api.Error
	var ns *client.NoServerError
	var nb *client.NotBraidError
	switch {
	case errors.As(err, &ae):
		return ae.Code
	case errors.As(err, &ns):
		return "no_server"
	case errors.As(err, &nb):
		return "not_braid"
	case errors.Is(err, errInterrupted):
		return "interrupted"
	case errors.Is(err, errUsage):
		return "usage"
	case errors.Is(err, context.DeadlineExceeded):
		return api.CodeTimeout
	}
	return "error"
}

func usage(w io.Writer) {
	fmt.Fprint(w, `braid — a batch-compute cluster for data-intensive jobs

Usage: braid COMMAND [flags]

Commands:
`)
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-8s %s\n", name, commands[name].summary)
	}
	fmt.Fprint(w, `
Client commands take --server URL (default $BRAID_SERVER, else http://127.0.0.1:7070),
--json for scripts (errors too, on stderr), and --timeout D (default 1m; no limit for
wait and submit --wait): until then they ride through a server that is unreachable, e.g.
restarting. Ids may be shortened to a unique prefix. Exit codes: 0 done, 1 failed,
2 bad usage, 130 interrupted. Run 'braid COMMAND -h' for a command's flags.

Quick start:  braid demo
`)
}

// newFlagSet returns a flag set that reports errors as errUsage.
func newFlagSet(name, synopsis string, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet("braid "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: braid %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses a command that takes flags and no other argument, mapping
// errors to errUsage; a stray argument is an error that names it.
func parse(fs *flag.FlagSet, args []string) error {
	return parseArgs(fs, args, 0)
}

// parseArgs parses flags, which may come before or after positional
// arguments (`braid get ID -o FILE`), and allows at most max positional
// arguments (-1: any number). The caller checks for too few.
func parseArgs(fs *flag.FlagSet, args []string, max int) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return errUsage
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

// strayArgument is the usage error for an argument the command does not
// take; a key=value where --param would take it says so.
func strayArgument(fs *flag.FlagSet, arg string) error {
	msg := fmt.Sprintf("unexpected argument %q", arg)
	if k, _, ok := strings.Cut(arg, "="); ok && k != "" && fs.Lookup("param") != nil {
		msg += fmt.Sprintf(" (did you mean --param %s?)", arg)
	}
	return usageErrorf("%s; run '%s -h' for its flags", msg, fs.Name())
}

// usageError is bad usage that run reports (exit 2) and the flag package
// did not already explain.
type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == errUsage }

func usageErrorf(format string, a ...any) error {
	return &usageError{msg: fmt.Sprintf(format, a...)}
}

func runVersion(_ context.Context, args []string, e *env) error {
	fs := newFlagSet("version", "", e)
	if err := parse(fs, args); err != nil {
		return err
	}
	_, err := fmt.Fprintln(e.stdout, "braid", version.String())
	return err
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return fmt.Sprint([]string(*m)) }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
