package server

import "sync"

// bufPool recycles unit message buffers between the loop (which encodes) and
// the stream senders (which are done with them after Send).
var bufPool sync.Pool

func getBuf(n int) []byte {
	if b, ok := bufPool.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:0]
	}
	return make([]byte, 0, n)
}

func putBuf(b []byte) {
	if cap(b) > 1<<20 {
		return // keep the pool to small messages; big ones go to the GC
	}
	bufPool.Put(&b)
}
