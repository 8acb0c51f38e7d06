package main

import (
	"fmt"
	"strings"
)

// unknownSubcommand is the usage error for a subcommand cmd does not have
// (braid token creat), with the nearest of those it has.
func unknownSubcommand(cmd, sub string, subs ...string) error {
	if near := nearest(sub, subs); near != "" {
		return usageErrorf("unknown subcommand %q; did you mean %s? (braid %s %s -h shows its flags)", sub, near, cmd, near)
	}
	return usageErrorf("unknown subcommand %q: want %s (braid %s -h)", sub, orList(subs), cmd)
}

// orList is "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return fmt.Sprintf("%s or %s", strings.Join(words[:len(words)-1], ", "), words[len(words)-1])
}

// nearest is the candidate closest to word by edit distance (a
// transposition counts as one edit), if it is close enough to be what
// was meant: at most one edit for words of up to four letters, two for
// longer ones. "" if none is.
func nearest(word string, candidates []string) string {
	limit := 1
	if len(word) > 4 {
		limit = 2
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		if d := editDistance(word, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of adjacent
// bytes.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
