// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBraidReassembleDATA: an ordered message of DATA chunks comes back
// whole whether its chunks arrive in order (appended without a duplicate
// scan or a sort), out of order, or with duplicates, before and after the
// set's last chunk.
func TestBraidReassembleDATA(t *testing.T) {
	const n = 8
	msg := make([]byte, 0, n*3)
	for i := range n {
		msg = append(msg, byte('a'+i), byte('a'+i), byte('a'+i))
	}
	chunk := func(i int) *chunkPayloadData {
		return &chunkPayloadData{tsn: uint32(100 + i), streamIdentifier: 1, streamSequenceNumber: 0, //nolint:gosec // G115
			beginningFragment: i == 0, endingFragment: i == n-1, userData: msg[3*i : 3*i+3]}
	}
	for _, c := range []struct {
		name  string
		order []int
	}{
		{"in order", []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"reversed", []int{7, 6, 5, 4, 3, 2, 1, 0}},
		{"one late", []int{0, 1, 3, 4, 5, 6, 7, 2}},
		{"duplicates", []int{0, 1, 1, 2, 3, 2, 4, 5, 6, 6, 7, 7}},
		{"duplicate of a middle one after later ones", []int{0, 1, 2, 3, 4, 5, 3, 6, 7}},
	} {
		q := newReassemblyQueue(1, 0)
		seen := map[int]bool{}
		for k, i := range c.order {
			complete, err := q.pushWithError(chunk(i))
			require.NoError(t, err, c.name)
			// Complete when the last missing chunk comes; a duplicate completes nothing.
			want := !seen[i] && len(seen) == n-1
			seen[i] = true
			require.Equal(t, want, complete, "%s: complete after push %d", c.name, k)
		}
		require.Equal(t, len(msg), q.getNumBytes(), c.name)
		buf := make([]byte, 64)
		got, _, err := q.read(buf)
		require.NoError(t, err, c.name)
		require.True(t, bytes.Equal(msg, buf[:got]), "%s: read %q", c.name, buf[:got])
		require.Zero(t, q.getNumBytes(), c.name)
	}
}

// BenchmarkBraidReassembleInOrder: one ordered message of n DATA chunks,
// pushed in order into a new reassembly queue (the path the receive loop
// takes, pushWithError).
func BenchmarkBraidReassembleInOrder(b *testing.B) {
	for _, n := range []int{45, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			data := make([]byte, 16)
			b.ReportAllocs()
			for b.Loop() {
				q := newReassemblyQueue(1, 0)
				for i := range n {
					if _, err := q.pushWithError(&chunkPayloadData{tsn: uint32(i + 1), streamIdentifier: 1,
						beginningFragment: i == 0, endingFragment: i == n-1, userData: data}); err != nil {
						b.Fatal(err)
					}
				}
				if !q.isReadable() {
					b.Fatal("not readable")
				}
			}
		})
	}
}
