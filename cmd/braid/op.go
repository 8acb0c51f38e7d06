package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/userop"
)

const opSynopsis = `add NAME (--wasm FILE [--abi command|reactor] | --exec SCRIPT --interpreter PROGRAM)
      [--param NAME:TYPE[=DEFAULT][@MIN..MAX] ...] [--summary TEXT] [--reach N]
      [--unit-timeout D] [--memory MiB] [--max-output BYTES] [--network]
  braid op rm NAME...

Registers a user operation: a WebAssembly module (WASI preview 1) that workers
download and run sandboxed, one unit at a time; or a script that workers whose
owners allow its interpreter (braid worker --allow-exec) run, each unit in a
sandbox of its own. See docs/user-ops.md. Adding a name again makes a new
version; jobs keep the version they started with.`

// runOp manages user operations: braid op add, braid op rm.
func runOp(ctx context.Context, args []string, e *env) error {
	if len(args) > 0 {
		switch args[0] {
		case "add":
			return runOpAdd(ctx, args[1:], e)
		case "rm":
			return runOpRm(ctx, args[1:], e)
		}
	}
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		return runOpAdd(ctx, args, e) // add's flags are op's
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return unknownSubcommand("op", args[0], "add", "rm")
	}
	fmt.Fprintln(e.stderr, "Usage: braid op "+opSynopsis)
	return errUsage
}

func runOpAdd(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("op", opSynopsis, e)
	var cf clientFlags
	cf.register(fs, e)
	var params multiFlag
	wasm := fs.String("wasm", "", "the WebAssembly module, a .wasm `FILE` (GOOS=wasip1 GOARCH=wasm go build makes one)")
	script := fs.String("exec", "", "a `SCRIPT` run by --interpreter, with the command ABI's stdin, stdout and arguments")
	interpreter := fs.String("interpreter", "", "the `PROGRAM` that runs --exec's script, by name: python3, sh, ...")
	abi := fs.String("abi", api.ABICommand, "how units reach the module: command (stdin to stdout, once per unit) or\nreactor (an instance per worker thread; braid_run per unit)")
	fs.Var(&params, "param", "declare a parameter `NAME:TYPE[=DEFAULT][@MIN..MAX]`, TYPE bool, int, float or string\n(repeatable), e.g. lower:bool=false or sigma:float=1@0..10")
	summary := fs.String("summary", "", "a line for braid ops")
	reach := fs.Int("reach", -1, "make an image operation tileable: each tile gets a halo `N` pixels wide")
	timeout := fs.Duration("unit-timeout", 0, fmt.Sprintf("wall-time limit per unit (default %v; a job's --unit-timeout overrides it)", userop.DefaultTimeout))
	memory := fs.Int("memory", 0, fmt.Sprintf("memory limit in `MiB` (default %d)", userop.DefaultMemory))
	maxOutput := fs.Int64("max-output", 0, "limit on a unit's output in `BYTES` (default and most: 64 MiB)")
	network := fs.Bool("network", false, "give a script's units the worker's network, on workers started with --exec-network (default: none)")
	if err := parseArgs(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 || (*wasm == "") == (*script == "") {
		fmt.Fprintln(e.stderr, "braid op add: a NAME and one of --wasm FILE and --exec SCRIPT are required")
		fs.Usage()
		return errUsage
	}
	file := *wasm
	if *script != "" {
		if isSet(fs, "abi") {
			return usageErrorf("--abi is for --wasm modules; a script's is exec")
		}
		file, *abi = *script, api.ABIExec
	}
	spec := api.OperationSpec{Name: fs.Arg(0), ABI: *abi, Interpreter: *interpreter, Summary: *summary,
		Limits: api.OpLimits{TimeoutMS: timeout.Milliseconds(), MemoryMiB: *memory, MaxOutput: *maxOutput, Network: *network}}
	if *timeout < 0 || *timeout > 0 && *timeout < time.Millisecond {
		return usageErrorf("--unit-timeout %v: want a positive duration", *timeout)
	}
	if isSet(fs, "reach") {
		spec.Reach = reach
	}
	for _, p := range params {
		decl, err := userop.ParseParam(p)
		if err != nil {
			return usageErrorf("--param %s", strings.TrimPrefix(err.Error(), userop.ErrBadSpec.Error()+": "))
		}
		spec.Params = append(spec.Params, decl)
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	return cf.run(ctx, e, defaultTimeout, func(ctx context.Context, s session) error {
		obj, err := s.Put(ctx, f)
		if err != nil {
			return fmt.Errorf("uploading %s: %w", file, err)
		}
		spec.Module = obj.ID
		op, err := s.AddOperation(ctx, spec)
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(e.stdout, op)
		}
		what := fmt.Sprintf("module %s, %s ABI", op.Digest[:12], op.ABI)
		if op.ABI == api.ABIExec {
			what = fmt.Sprintf("script %s, run by %s", op.Digest[:12], op.Interpreter)
		}
		_, err = fmt.Fprintf(e.stdout, "%s version %d (%s)\n", op.Name, op.Version, what)
		return err
	})
}

func runOpRm(ctx context.Context, args []string, e *env) error {
	return removeArgs(ctx, "op rm", "NAME...", "operation", "removed", args, e, printRemoved,
		func(ctx context.Context, s session, name string) error { return s.RemoveOperation(ctx, name) },
		func(err error) string { return err.Error() })
}
