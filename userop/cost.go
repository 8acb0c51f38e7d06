package userop

import "runtime"

// What checking a module costs. Compiling WebAssembly takes memory in
// proportion to the largest function's size, not the module's (wazero
// compiles one function at a time): on amd64, wazero 1.12's compiler took
// 47 to 49 MiB per MiB of a single function, from 0.5 to 7.6 MB of it
// (24 MiB to 358 MiB of resident memory), and under 1 MiB per MiB of
// module for many small functions; its interpreter, which other platforms
// use, took 131 MiB per MiB. CompileCost rounds those up.
const (
	compileBase = 16 << 20
	// compilerPerByte and interpreterPerByte are the bytes per byte of the
	// largest function, with room.
	compilerPerByte    = 64
	interpreterPerByte = 160
)

// perByte is what this platform's compile costs per byte of function.
func perByte() int64 {
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" {
		return compilerPerByte
	}
	return interpreterPerByte
}

// CompileCost is the memory Check may take to compile module, in bytes:
// a bound from the size of its largest function and its own size. It
// fails as Check would for a malformed module, or one with a function over
// MaxFunction bytes.
func CompileCost(module []byte) (int64, error) {
	if len(module) < 8 || string(module[:4]) != "\x00asm" {
		return 0, badSpec("not a WebAssembly module (a .wasm file starts with the bytes \\0asm)")
	}
	largest, err := vetLargest(boundTables(module))
	if err != nil {
		return 0, err
	}
	return costOf(int64(largest), int64(len(module))), nil
}

// CompileCostBound is CompileCost's bound for any module of size bytes,
// before it is read: as if it were one function (up to MaxFunction).
func CompileCostBound(size int64) int64 {
	return costOf(min(size, MaxFunction), size)
}

func costOf(largest, size int64) int64 {
	return compileBase + perByte()*largest + 2*size
}
