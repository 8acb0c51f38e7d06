package userop_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/userop"
	"github.com/braidhq/braid/userop/wasmtest"
)

func TestParseParam(t *testing.T) {
	for in, want := range map[string]string{
		"lower:bool=false":  `{lower bool false <nil> <nil>}`,
		"sigma:float=1@0..": `{sigma float 1 0 <nil>}`,
		"k:int@..10":        `{k int  <nil> 10}`,
		"s:string=a@b":      `{s string a@b <nil> <nil>}`,
	} {
		p, err := userop.ParseParam(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		got := "{" + p.Name + " " + p.Type + " " + p.Default + " " + ptr(p.Min) + " " + ptr(p.Max) + "}"
		if got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"lower":             "want NAME:TYPE",
		"Lower:bool":        "parameter name",
		"x:complex":         `type "complex"`,
		"x:bool=maybe":      "is not true or false",
		"x:int=3@5..":       "below its minimum 5",
		"x:int@5..1":        "min 5 is above max 1",
		"x:string@1..2":     "only int and float",
		"x:float@a..":       `"a" is not a number`,
		"x:int=1.5":         "not an integer",
		"braid.timeout:int": "parameter name",
	} {
		if _, err := userop.ParseParam(in); err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, userop.ErrBadSpec) {
			t.Errorf("%s: %v, want an error saying %q", in, err, want)
		}
	}
}

func ptr(f *float64) string {
	if f == nil {
		return "<nil>"
	}
	return fmt.Sprint(*f)
}

func TestValues(t *testing.T) {
	decl := []api.Parameter{{Name: "lower", Type: "bool", Default: "false"}, {Name: "top", Type: "int", Min: new(0.0)}, {Name: "tag", Type: "string"}}
	got, err := userop.Values("wc", decl, map[string]string{"top": "5"})
	if err != nil || len(got) != 2 || got[0] != [2]string{"lower", "false"} || got[1] != [2]string{"top", "5"} {
		t.Fatalf("%v, %v", got, err)
	}
	for _, c := range []struct {
		p    map[string]string
		want string
	}{
		{map[string]string{"upper": "1"}, `wc: unknown parameter "upper" (known: lower, top, tag)`},
		{map[string]string{"top": "-1"}, "wc: top -1 is below its minimum 0"},
		{map[string]string{"lower": "yes"}, `wc: lower "yes" is not true or false`},
		{map[string]string{"tag": strings.Repeat("x", 2000)}, "wc: tag is 2000 bytes"},
		{map[string]string{"tag": "a\n--top=-5"}, "wc: tag has a control character"},
	} {
		if _, err := userop.Values("wc", decl, c.p); err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, userop.ErrBadParam) {
			t.Errorf("%v: %v, want %q", c.p, err, c.want)
		}
	}
}

func TestInvocationRoundTrip(t *testing.T) {
	in := userop.NewInvocation(api.ABIReactor, api.OpLimits{TimeoutMS: 5000, MemoryMiB: 32}, 700, [][2]string{{"b", "2"}, {"a", "x y"}})
	out, err := userop.ParseInvocation(in.UnitParams())
	if err != nil {
		t.Fatal(err)
	}
	if out.ABI != api.ABIReactor || out.Timeout.Milliseconds() != 700 || out.MemoryMiB != 32 || out.MaxOutput != userop.MaxOutput {
		t.Fatalf("%+v", out)
	}
	if a := strings.Join(out.Args("op"), "|"); a != "op|--a=x y|--b=2" {
		t.Fatalf("args %s", a)
	}
	script := userop.NewExecInvocation("sh", api.OpLimits{Network: true}, 0, nil)
	if out, err := userop.ParseInvocation(script.UnitParams()); err != nil || !out.Network || out.Interpreter != "sh" {
		t.Fatalf("a script asking for the network: %+v, %v", out, err)
	}
	for _, bad := range []map[string]string{
		{},
		{"braid.abi": "command", "braid.timeout_ms": "0", "braid.memory_mib": "1", "braid.max_output": "1"},
		{"braid.abi": "command", "braid.timeout_ms": "1", "braid.memory_mib": "99999", "braid.max_output": "1"},
		{"braid.abi": "command", "braid.timeout_ms": "1", "braid.memory_mib": "1", "braid.max_output": "999999999999"},
		{"braid.abi": "exec", "braid.timeout_ms": "1", "braid.memory_mib": "1", "braid.max_output": "1"},
		{"braid.abi": "command", "braid.timeout_ms": "1", "braid.memory_mib": "1", "braid.max_output": "1", "braid.network": "true"},
		{"braid.abi": "exec", "braid.interpreter": "sh", "braid.timeout_ms": "1", "braid.memory_mib": "1", "braid.max_output": "1", "braid.network": "1"},
	} {
		if _, err := userop.ParseInvocation(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestCheckSpec(t *testing.T) {
	builtin := func(n string) bool { return n == "blur" }
	for _, c := range []struct {
		spec api.OperationSpec
		want string
	}{
		{api.OperationSpec{Name: "Word"}, "name"},
		{api.OperationSpec{Name: "blur"}, "built-in"},
		{api.OperationSpec{Name: "wc", ABI: "shell"}, `abi "shell"`},
		{api.OperationSpec{Name: "wc", ABI: api.ABIExec}, `interpreter ""`},
		{api.OperationSpec{Name: "wc", ABI: api.ABIExec, Interpreter: "/usr/bin/python3"}, "no path"},
		{api.OperationSpec{Name: "wc", Interpreter: "python3"}, "needs none"},
		{api.OperationSpec{Name: "wc", Limits: api.OpLimits{Network: true}}, "network is for scripts"},
		{api.OperationSpec{Name: "wc", Reach: new(-1)}, "reach -1"},
		{api.OperationSpec{Name: "wc", Limits: api.OpLimits{TimeoutMS: 1 << 40}}, "timeout"},
		{api.OperationSpec{Name: "wc", Limits: api.OpLimits{TimeoutMS: 10_000_000_000_000}}, "timeout"}, // overflows a Duration
		{api.OperationSpec{Name: "wc", Limits: api.OpLimits{MemoryMiB: 1 << 20}}, "memory"},
		{api.OperationSpec{Name: "wc", Params: []api.Parameter{{Name: "a", Type: "int"}, {Name: "a", Type: "int"}}}, "declared twice"},
	} {
		if err := userop.CheckSpec(&c.spec, builtin); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
	spec := api.OperationSpec{Name: "wc"}
	if err := userop.CheckSpec(&spec, builtin); err != nil || spec.ABI != api.ABICommand {
		t.Fatalf("%v, abi %q", err, spec.ABI)
	}
}

func TestCheck(t *testing.T) {
	ctx := t.Context()
	for _, c := range []struct {
		name   string
		module []byte
		abi    string
		want   string
	}{
		{"text", []byte("#!/bin/sh\necho hi\n"), api.ABICommand, "not a WebAssembly module"},
		{"truncated", wasmtest.Module()[:20], api.ABICommand, "malformed: memory section"},
		{"bad opcode", wasmtest.Module(0xff), api.ABICommand, "does not compile"},
		{"reactor as command", wasmtest.Build(t, "./examples/ops/echo", true), api.ABICommand, "exports _start()"},
		{"command as reactor", wasmtest.Module(), api.ABIReactor, "exports braid_run"},
	} {
		if err := userop.Check(ctx, c.module, c.abi, 64); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if err := userop.Check(ctx, wasmtest.Module(), api.ABICommand, 64); err != nil {
		t.Fatal(err)
	}
	if err := userop.Check(ctx, wasmtest.Build(t, "./examples/ops/echo", true), api.ABIReactor, 64); err != nil {
		t.Fatal(err)
	}
}

// FuzzCheck feeds Check random and mutated modules: it must answer, never
// panic or hang.
func FuzzCheck(f *testing.F) {
	f.Add(wasmtest.Module())
	f.Add(wasmtest.Module(wasmtest.Loop...))
	f.Add(wasmtest.Module(wasmtest.Grow...))
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, m []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_ = userop.Check(t.Context(), m, api.ABICommand, 4)
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20+1000*uint64(len(m)) {
			t.Fatalf("checking a module of %d bytes allocated %d MiB", len(m), n>>20)
		}
	})
}
