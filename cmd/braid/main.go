// Command braid is the one binary of the braid batch-compute cluster: the
// server, the worker, the client commands, the demo and the benchmarks.
//
// Run `braid help` for the list of commands and `braid COMMAND -h` for each
// command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"syscall"
)

// command is one subcommand; run gets the arguments after its name.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, env *env) error
}

// env is what a command may touch besides its flags.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"server":  {"run a server: control API, object store, scheduler", runServer},
		"worker":  {"run a worker that registers with servers and runs units", runWorker},
		"put":     {"upload a file; prints its object id", runPut},
		"delete":  {"delete objects, or finished jobs with --job", runDelete},
		"get":     {"download an object", runGet},
		"submit":  {"submit a job; prints its id", runSubmit},
		"status":  {"show a job's status", runStatus},
		"wait":    {"wait for a job to finish, riding through server restarts; a progress bar on a terminal", runWait},
		"cancel":  {"cancel a job", runCancel},
		"jobs":    {"list jobs", runJobs},
		"workers": {"list registered workers", runWorkers},
		"ops":     {"list the operations catalogue", runOps},
		"demo":    {"start a server and two workers on loopback and run sample jobs", runDemo},
		"bench":   {"run benchmarks: overhead, transport, paper, soak, chaos", runBench},
	}
}

// errUsage marks errors the flag package already explained.
var errUsage = errors.New("usage")

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
	os.Exit(run(ctx, os.Args[1:], &env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}))
}

// run dispatches to a subcommand and maps its error to an exit code: 0 ok,
// 1 failure, 2 bad usage.
func run(ctx context.Context, args []string, e *env) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(e.stdout)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "braid: unknown command %q\n\n", args[0])
		usage(e.stderr)
		return 2
	}
	err := cmd.run(ctx, args[1:], e)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	fmt.Fprintf(e.stderr, "braid %s: %v\n", args[0], err)
	return 1
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
--json for scripts, and --timeout D (default 1m; no limit for wait and submit --wait):
until then they ride through a server that is unreachable, e.g. restarting.
Run 'braid COMMAND -h' for a command's flags.

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

// parse parses flags, which may come before or after positional arguments
// (`braid get ID -o FILE`), mapping errors to errUsage.
func parse(fs *flag.FlagSet, args []string) error {
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
	return fs.Parse(append([]string{"--"}, pos...))
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return fmt.Sprint([]string(*m)) }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
