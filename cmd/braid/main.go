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
	"maps"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
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
		"bench":   {"run benchmarks: overhead, transport, net, paper, soak, chaos, feedback, schedsim", runBench},
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
	args, err := commandFirst(args)
	if err != nil {
		fmt.Fprintf(e.stderr, "braid: %v\n", err)
		return 2
	}
	if len(args) == 0 {
		usage(e.stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		return help(ctx, args[1:], e)
	case "-version", "--version":
		args[0] = "version"
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "braid: %s\n", unknownCommand(args[0]))
		return 2
	}
	err = cmd.run(ctx, args[1:], e)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = errInterrupted // Ctrl-C: say so, not "context canceled"
	}
	var ue *usageError
	if errors.Is(err, errUsage) && !errors.As(err, &ue) {
		return 2 // the command printed its usage
	}
	report(e, args[0], err)
	return exitCode(err)
}

// help is `braid help [COMMAND...]`: the list of commands, or a command's
// own help (what `braid COMMAND -h` prints), on stdout.
func help(ctx context.Context, args []string, e *env) int {
	if len(args) == 0 {
		usage(e.stdout)
		return 0
	}
	if _, ok := commands[args[0]]; !ok {
		fmt.Fprintf(e.stderr, "braid help: %s\n", unknownCommand(args[0]))
		return 2
	}
	out := *e
	out.stderr = e.stdout
	return run(ctx, append(slices.Clone(args), "-h"), &out)
}

// unknownCommand says that name is no command, and which one it may be a
// typo of.
func unknownCommand(name string) string {
	if near := nearest(name, slices.Collect(maps.Keys(commands))); near != "" {
		return fmt.Sprintf("unknown command %q; did you mean %s? (braid %s -h shows its flags)", name, near, near)
	}
	return fmt.Sprintf("unknown command %q; braid help lists the commands", name)
}

// clientFlagArgs are the client flags that may come before the command
// (`braid --server URL jobs`), and whether each takes a value.
var clientFlagArgs = map[string]bool{"server": true, "token": true, "ca": true, "ca-fingerprint": true, "timeout": true, "json": false}

// commandFirst moves client flags given before the command to after it,
// where the command's flag set reads them.
func commandFirst(args []string) ([]string, error) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") && !isHelpOrVersion(args[i]) {
		name, _, withValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		takesValue, ok := clientFlagArgs[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("unknown flag %s before the command: only client flags (--server, --token, --json, ...) may come first; braid help lists the commands", args[i])
		case takesValue && !withValue:
			i++
		}
		i++
	}
	if i == 0 {
		return args, nil
	}
	if i >= len(args) {
		return nil, fmt.Errorf("%s: no command; braid help lists the commands", strings.Join(args, " "))
	}
	out := append([]string{args[i]}, args[:i]...)
	return append(out, args[i+1:]...), nil
}

func isHelpOrVersion(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "-version", "--version":
		return true
	}
	return false
}

// exitCode is the exit code of a command that failed with err. Bad usage
// is 2 whether the command saw it or the server did (a parameter out of
// range, an operation that does not exist).
func exitCode(err error) int {
	switch {
	case errors.Is(err, errUsage), serverRefusedUsage(err):
		return 2
	case errors.Is(err, errInterrupted):
		return 130
	}
	return 1
}

// serverRefusedUsage reports whether err is the server's refusal of what
// the user asked for: a bad parameter or input, an unknown operation.
func serverRefusedUsage(err error) bool {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.Code {
	case api.CodeBadRequest, api.CodeBadParameter, api.CodeUnknownOp:
		return true
	}
	return false
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
	var wu *client.WrongURLError
	switch {
	case errors.As(err, &wu):
		return "wrong_url"
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
--token T (default $BRAID_TOKEN; a new server writes its first one to DATA/admin.token),
--json for scripts (errors too, on stderr), and --timeout D (default 1m; no limit for
wait and submit --wait): until then they ride through a server that is unreachable, e.g.
restarting. These flags may also come before the command. Ids may be shortened to a
unique prefix. Exit codes: 0 done, 1 failed, 2 bad usage (the server's bad_request,
bad_parameter and unknown_operation too), 130 interrupted. Run 'braid help COMMAND'
or 'braid COMMAND -h' for a command's flags.

Quick start:  braid demo
`)
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
