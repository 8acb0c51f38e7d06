// Command blur is braid's built-in Gaussian blur as a user operation
// (command ABI, docs/user-ops.md): the same Go code, compiled to
// WebAssembly, so its output equals the built-in's byte for byte and its
// speed measures what the sandbox costs.
//
//	GOOS=wasip1 GOARCH=wasm go build -o blur.wasm ./examples/ops/blur
//	braid op add wblur --wasm blur.wasm --param 'sigma:float=2@0..64' --param format:string --reach 6
//
// With --reach 6 it can be tiled exactly for sigma up to 2 (the built-in's
// reach is ceil(3·sigma)).
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/braidhq/braid/ops"
)

func main() {
	params := ops.Params{}
	for _, a := range os.Args[1:] {
		k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "argument %q: want --name=value\n", a)
			os.Exit(2)
		}
		params[k] = v
	}
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading the input:", err)
		os.Exit(1)
	}
	out, err := ops.Run("blur", params, in)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if _, err := os.Stdout.Write(out); err != nil {
		os.Exit(1)
	}
}
