package userop_test

import (
	"bytes"
	"image"
	"image/draw"
	"os"
	"syscall"
	"testing"
	"time"

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
// the 19 KiB sample GIF and the large sample PNG; and with the blur in C
// (examples/ops/cblur, clang and wasi-libc) on the same pixels as PPM,
// which it reads and writes without a codec; native-nocodec is the
// built-in without its codecs, the same work as cblur's, and 1x1 what a
// cblur unit costs beside its arithmetic. cpu-ns/op is the process's CPU
// time per op, steadier than ns/op on a shared machine.
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
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := ops.Run("blur", ops.Params{"sigma": "2"}, img.data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(img.name+"/native-nocodec", func(b *testing.B) { // the arithmetic alone, as cblur does
			blur, _ := ops.Lookup("blur")
			m, _, err := image.Decode(bytes.NewReader(img.data))
			if err != nil {
				b.Fatal(err)
			}
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := blur.Apply(m, ops.Params{"sigma": "2"}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(img.name+"/wasm", func(b *testing.B) {
			defer reportCPU(b)()
			for b.Loop() {
				out, err := r.Run(b.Context(), "blur", d, in, img.data)
				if err != nil || !bytes.Equal(out, want) {
					b.Fatalf("%d bytes, %v (equal to the built-in's: %v)", len(out), err, bytes.Equal(out, want))
				}
			}
		})
		b.Run(img.name+"/cblur-ppm", func(b *testing.B) {
			c := st.add(wasmtest.BuildC(b, cblurSource))
			m, _, err := image.Decode(bytes.NewReader(img.data))
			if err != nil {
				b.Fatal(err)
			}
			rgb := image.NewNRGBA(m.Bounds())
			draw.Draw(rgb, rgb.Rect, m, m.Bounds().Min, draw.Src)
			input := ppm(rgb)
			defer reportCPU(b)()
			for b.Loop() {
				if out, err := r.Run(b.Context(), "cblur", c, in, input); err != nil || len(out) != len(input) {
					b.Fatalf("%d bytes, %v", len(out), err)
				}
			}
		})
	}
	b.Run("1x1/cblur-ppm", func(b *testing.B) { // what a unit costs beside the arithmetic
		c := st.add(wasmtest.BuildC(b, cblurSource))
		input := []byte("P6\n1 1\n255\nabc")
		defer reportCPU(b)()
		for b.Loop() {
			if out, err := r.Run(b.Context(), "cblur", c, in, input); err != nil || len(out) != len(input) {
				b.Fatalf("%d bytes, %v", len(out), err)
			}
		}
	})
}

// reportCPU, deferred at the start of a benchmark, reports the process's
// CPU time per iteration beside the wall time: on a machine shared with
// other work, wall time counts the waits for a core, CPU time does not.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() { b.ReportMetric(float64(cpu()-start)/float64(max(b.N, 1)), "cpu-ns/op") }
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
