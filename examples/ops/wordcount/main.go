// Command wordcount is a braid user operation (command ABI, see
// docs/user-ops.md): it counts the words of the unit's input and writes
// one line per distinct word, "count word", most frequent first.
//
//	GOOS=wasip1 GOARCH=wasm go build -o wordcount.wasm ./examples/ops/wordcount
//	braid op add wordcount --wasm wordcount.wasm --param lower:bool=false --param top:int=0@0..
//
// Parameters arrive as arguments: --lower=true folds case, --top=N keeps
// the N most frequent words (0: all).
package main

import (
	"bufio"
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode"
)

func main() {
	lower := flag.Bool("lower", false, "fold words to lower case")
	top := flag.Int("top", 0, "keep the N most frequent words (0: all)")
	flag.Parse()
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading the input:", err)
		os.Exit(1)
	}
	counts := map[string]int{}
	for _, w := range strings.FieldsFunc(string(in), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' }) {
		if *lower {
			w = strings.ToLower(w)
		}
		counts[w]++
	}
	words := make([]string, 0, len(counts))
	for w := range counts {
		words = append(words, w)
	}
	slices.SortFunc(words, func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), strings.Compare(a, b))
	})
	if *top > 0 && *top < len(words) {
		words = words[:*top]
	}
	out := bufio.NewWriter(os.Stdout)
	for _, w := range words {
		fmt.Fprintf(out, "%d %s\n", counts[w], w)
	}
	if err := out.Flush(); err != nil {
		os.Exit(1)
	}
}
