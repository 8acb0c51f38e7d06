// Command hostile misbehaves as its --mode parameter says, for the
// sandbox's tests: it is built with GOOS=wasip1 GOARCH=wasm.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	mode := ""
	for _, a := range os.Args[1:] {
		if v, ok := strings.CutPrefix(a, "--mode="); ok {
			mode = v
		}
	}
	switch mode {
	case "echo":
		in, _ := io.ReadAll(os.Stdin)
		os.Stdout.Write(in)
	case "args":
		fmt.Print(strings.Join(os.Args, " "))
	case "env":
		fmt.Print(len(os.Environ()))
	case "file":
		_, err := os.ReadFile("/etc/passwd")
		fmt.Print(err != nil)
	case "loop":
		for {
		}
	case "alloc":
		var keep [][]byte
		for {
			keep = append(keep, make([]byte, 8<<20))
		}
	case "spew":
		b := make([]byte, 1<<16)
		for {
			os.Stdout.Write(b)
		}
	case "fail":
		fmt.Fprintln(os.Stderr, "no can do")
		os.Exit(3)
	case "panic":
		panic("deliberate")
	default:
		fmt.Fprintf(os.Stderr, "unknown mode %q\n", mode)
		os.Exit(2)
	}
}
