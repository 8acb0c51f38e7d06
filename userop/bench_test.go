package userop_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/ops/samples"
	"github.com/braidhq/braid/userop"
	"github.com/braidhq/braid/userop/wasmtest"
)

// BenchmarkUnit is the sandbox's cost per unit of a no-op: a command
// instantiates a module per unit (a Go runtime's start-up each time), a
// reactor calls braid_run on an instance kept per thread.
//
//	go test ./userop -run '^$' -bench Unit
func BenchmarkUnit(b *testing.B) {
	for _, c := range []struct {
		name, pkg, abi string
		reactor        bool
	}{
		{"command", "./userop/testdata/hostile", api.ABICommand, false},
		{"reactor", "./examples/ops/echo", api.ABIReactor, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			var st store
			d := st.add(wasmtest.Build(b, c.pkg, c.reactor))
			r, err := userop.NewRuntime(userop.Config{Fetch: st.fetch})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			in := userop.NewInvocation(c.abi, api.OpLimits{}, 0, [][2]string{{"mode", "echo"}})
			input := []byte("x")
			if _, err := r.Run(b.Context(), "noop", d, in, input); err != nil { // compiles
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if out, err := r.Run(b.Context(), "noop", d, in, input); err != nil || !bytes.Equal(out, input) {
					b.Fatalf("%q, %v", out, err)
				}
			}
		})
	}
}

// BenchmarkBlur compares the built-in Gaussian blur with the same Go code
// compiled to WebAssembly (examples/ops/blur) and run in the sandbox, on
// the 19 KiB sample GIF and the large sample PNG.
//
//	go test ./userop -run '^$' -bench Blur
func BenchmarkBlur(b *testing.B) {
	var st store
	d := st.add(wasmtest.Build(b, "./examples/ops/blur", false))
	r, err := userop.NewRuntime(userop.Config{Fetch: st.fetch})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	in := userop.NewInvocation(api.ABICommand, api.OpLimits{MemoryMiB: 1024}, 0, [][2]string{{"sigma", "2"}})
	for _, img := range []struct {
		name string
		data []byte
	}{{"gif", samples.GIF()}, {"png", samples.PNG()}} {
		want, err := ops.Run("blur", ops.Params{"sigma": "2"}, img.data)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(img.name+"/native", func(b *testing.B) {
			for b.Loop() {
				if _, err := ops.Run("blur", ops.Params{"sigma": "2"}, img.data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(img.name+"/wasm", func(b *testing.B) {
			for b.Loop() {
				out, err := r.Run(b.Context(), "blur", d, in, img.data)
				if err != nil || !bytes.Equal(out, want) {
					b.Fatalf("%d bytes, %v (equal to the built-in's: %v)", len(out), err, bytes.Equal(out, want))
				}
			}
		})
	}
}

// BenchmarkExecUnit is the cost per unit of a script that copies one
// byte: each unit starts its sandbox (a user id, namespaces, a cgroup,
// a root filesystem) and sh in it.
//
//	go test ./userop -run '^$' -bench ExecUnit
func BenchmarkExecUnit(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("scripts run in a sandbox, which needs root")
	}
	var st store
	d := st.add([]byte("cat"))
	r, err := userop.NewRuntime(userop.Config{Fetch: st.fetch, Exec: map[string]string{"sh": "/bin/sh"}})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	in := userop.NewExecInvocation("sh", api.OpLimits{}, 0, nil)
	input := []byte("x")
	for b.Loop() {
		if out, err := r.Run(b.Context(), "cat", d, in, input); err != nil || !bytes.Equal(out, input) {
			b.Fatalf("%q, %v", out, err)
		}
	}
}
