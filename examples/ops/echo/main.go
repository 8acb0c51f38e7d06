//go:build wasip1

// Command echo is a braid user operation in the reactor ABI (see
// docs/user-ops.md): braid instantiates it once per worker thread and
// calls braid_run once per unit, so Go's start-up is paid once. It
// returns its input, upper-cased when --upper=true.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o echo.wasm ./examples/ops/echo
//	braid op add echo --wasm echo.wasm --abi reactor --param upper:bool=false
package main

import (
	"bytes"
	"io"
	"os"
	"strings"
)

// braidRun runs one unit: stdin holds the input (inputLen bytes) and then
// the parameters, "--name=value" lines (paramsLen bytes); the output goes
// to stdout. A non-zero result fails the unit with stderr as the reason.
//
//go:wasmexport braid_run
func braidRun(inputLen, paramsLen int32) int32 {
	data, err := io.ReadAll(os.Stdin)
	if err != nil || len(data) != int(inputLen)+int(paramsLen) {
		os.Stderr.WriteString("short input\n")
		return 1
	}
	input, params := data[:inputLen], string(data[inputLen:])
	if strings.Contains(params, "--upper=true") {
		input = bytes.ToUpper(input)
	}
	if _, err := os.Stdout.Write(input); err != nil {
		return 1
	}
	return 0
}

func main() {}
