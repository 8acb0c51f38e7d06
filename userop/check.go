package userop

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/braidhq/braid/api"
	"github.com/tetratelabs/wazero"
	wapi "github.com/tetratelabs/wazero/api"
)

// MaxModule is the largest module a user operation may have.
const MaxModule = 64 << 20

// MaxScript is the largest script an exec operation may have.
const MaxScript = 1 << 20

// CheckScript checks an exec operation's script, as the server does when
// the operation is registered.
func CheckScript(script []byte) error {
	switch {
	case len(script) == 0:
		return badSpec("the script is empty")
	case len(script) > MaxScript:
		return badSpec("the script is %d bytes, at most %d", len(script), MaxScript)
	}
	return nil
}

// wasiModule is the only module a user operation may import from.
const wasiModule = "wasi_snapshot_preview1"

// Reactor exports (docs/user-ops.md).
const (
	reactorInit = "_initialize"
	reactorRun  = "braid_run"
)

// Check validates module, as the server does once when an operation is
// registered, and checks that it can run under abi: that it is
// WebAssembly braid's runtime accepts, imports nothing but WASI preview
// 1, and exports what the ABI calls. The error, wrapping ErrBadSpec, says
// what is wrong in words a person understands.
func Check(ctx context.Context, module []byte, abi string, memoryMiB int) error {
	if len(module) > MaxModule {
		return badSpec("module is %d bytes, at most %d", len(module), MaxModule)
	}
	if len(module) < 8 || string(module[:4]) != "\x00asm" {
		return badSpec("not a WebAssembly module (a .wasm file starts with the bytes \\0asm)")
	}
	module = boundTables(module)
	if err := vet(module); err != nil {
		return err
	}
	// The interpreter validates a module as the workers' compiler does and
	// reads its imports and exports, for a tenth of the compiler's CPU
	// (a 2.8 MB Go module: 0.65 s against 6.3 s); the server never runs
	// the code, so it needs no machine code.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithMemoryLimitPages(pages(memoryMiB)))
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, module)
	if err != nil {
		return badSpec("the module does not compile: %v", err)
	}
	defer cm.Close(ctx)
	return checkShape(cm, abi, memoryMiB)
}

// checkShape checks a compiled module's imports and exports against abi.
func checkShape(cm wazero.CompiledModule, abi string, memoryMiB int) error {
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		if mod != wasiModule {
			return badSpec("the module imports %s.%s: user operations may import only WASI preview 1 (%s)", mod, name, wasiModule)
		}
	}
	for _, m := range cm.ImportedMemories() {
		mod, name, _ := m.Import()
		return badSpec("the module imports memory %s.%s: it must define its own", mod, name)
	}
	for _, m := range cm.ExportedMemories() {
		if uint64(m.Min()) > uint64(pages(memoryMiB)) {
			return badSpec("the module's memory starts at %d MiB, over the operation's limit of %d MiB", m.Min()/16, memoryMiB)
		}
	}
	exports := cm.ExportedFunctions()
	switch abi {
	case api.ABICommand:
		if !hasFunc(exports, "_start", nil, nil) {
			return badSpec("a command module exports _start() (WASI's entry point); this one exports %s", names(exports))
		}
	case api.ABIReactor:
		i32 := []wapi.ValueType{wapi.ValueTypeI32}
		switch {
		case !hasFunc(exports, reactorRun, []wapi.ValueType{wapi.ValueTypeI32, wapi.ValueTypeI32}, i32):
			return badSpec("a reactor module exports braid_run(input_len i32, params_len i32) i32; this one exports %s", names(exports))
		case hasFunc(exports, "_start", nil, nil):
			return badSpec("a reactor module has no _start (it is a command; build it with -buildmode=c-shared, or register it with --abi command)")
		}
		if f, ok := exports[reactorInit]; ok && (len(f.ParamTypes()) > 0 || len(f.ResultTypes()) > 0) {
			return badSpec("the module's _initialize takes or returns values")
		}
	}
	return nil
}

func hasFunc(exports map[string]wapi.FunctionDefinition, name string, params, results []wapi.ValueType) bool {
	f, ok := exports[name]
	return ok && slices.Equal(f.ParamTypes(), params) && slices.Equal(f.ResultTypes(), results)
}

func names(exports map[string]wapi.FunctionDefinition) string {
	var out []string
	for name, f := range exports {
		out = append(out, fmt.Sprintf("%s(%d)", name, len(f.ParamTypes())))
	}
	if len(out) == 0 {
		return "no functions"
	}
	slices.Sort(out)
	if len(out) > 8 {
		out = append(out[:8], "…")
	}
	return strings.Join(out, ", ")
}

// pages converts MiB to 64 KiB WebAssembly pages.
func pages(mib int) uint32 {
	if mib <= 0 {
		mib = DefaultMemory
	}
	return uint32(mib) * 16
}
