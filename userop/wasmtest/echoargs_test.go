package wasmtest

import (
	"bytes"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// EchoArgs copies an input of several reads, then writes its arguments.
func TestEchoArgs(t *testing.T) {
	ctx := t.Context()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	in := bytes.Repeat([]byte("0123456789"), 1000)
	var out bytes.Buffer
	cfg := wazero.NewModuleConfig().WithStdin(bytes.NewReader(in)).WithStdout(&out).WithArgs("op", "--a=1", "--b=")
	if _, err := rt.InstantiateWithConfig(ctx, EchoArgs(), cfg); err != nil {
		t.Fatal(err)
	}
	if want := string(in) + "op\n--a=1\n--b=\n"; out.String() != want {
		t.Fatalf("output ends %q, want %q", out.Bytes()[max(0, out.Len()-30):], want[len(want)-30:])
	}
}
