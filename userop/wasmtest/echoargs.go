package wasmtest

// EchoArgs assembles a command module (a few hundred bytes) that copies
// its stdin to stdout and then writes its arguments, one a line: for a user
// operation, the unit's input, the operation's name and a --NAME=VALUE line
// per parameter (docs/user-ops.md). Tests whose subject is not what an
// operation computes use it instead of a module built by Go, which the
// race detector's build of wazero takes a minute to compile.
//
// In the text format, with locals i and n:
//
//	block $done loop $copy                  ;; iovec at 0, count at 8
//	  (i32.store 0 1024) (i32.store 4 4096)
//	  br_if $done (fd_read 0 0 1 8)         ;; an error ends the copy
//	  br_if $done (i32.eqz (i32.load 8))    ;; so does EOF
//	  (i32.store 4 (i32.load 8)) drop (fd_write 1 0 1 12)
//	  br $copy
//	end end
//	drop (args_sizes_get 16 20) drop (args_get 8192 16384)
//	n = (i32.load 20)
//	block $end loop $nl                     ;; each NUL becomes a newline
//	  br_if $end (i32.ge_u i n)
//	  if (i32.eqz (i32.load8_u 16384+i)) (i32.store8 16384+i 10) end
//	  i = i+1; br $nl
//	end end
//	(i32.store 0 16384) (i32.store 4 n) drop (fd_write 1 0 1 12)
func EchoArgs() []byte {
	const (
		fdRead = iota // function indices: the imports, then _start
		fdWrite
		argsSizesGet
		argsGet
		start
	)
	var c []byte
	op := func(b ...byte) { c = append(c, b...) }
	i32 := func(v int32) { op(0x41); c = append(c, sleb(v)...) }
	store := func(addr, v int32) { i32(addr); i32(v); op(0x36, 2, 0) } // i32.store align 4
	load := func(addr int32) { i32(addr); op(0x28, 2, 0) }             // i32.load
	call := func(f byte) { op(0x10, f) }
	const i, n = 0, 1 // locals

	op(0x02, 0x40, 0x03, 0x40) // block loop
	store(0, 1024)
	store(4, 4096)
	i32(0)
	i32(0)
	i32(1)
	i32(8)
	call(fdRead)
	op(0x0d, 1) // br_if $done
	load(8)
	op(0x45, 0x0d, 1) // i32.eqz br_if $done
	i32(4)
	load(8)
	op(0x36, 2, 0)
	i32(1)
	i32(0)
	i32(1)
	i32(12)
	call(fdWrite)
	op(0x1a, 0x0c, 0, 0x0b, 0x0b) // drop br $copy end end

	i32(16)
	i32(20)
	call(argsSizesGet)
	op(0x1a)
	i32(8192)
	i32(16384)
	call(argsGet)
	op(0x1a)
	load(20)
	op(0x21, n)

	op(0x02, 0x40, 0x03, 0x40)          // block loop
	op(0x20, i, 0x20, n, 0x4f, 0x0d, 1) // i >= n: br_if $end
	op(0x20, i, 0x2d, 0, 0x80, 0x80, 1) // i32.load8_u offset=16384
	op(0x45, 0x04, 0x40)                // i32.eqz if
	op(0x20, i)
	i32(10)
	op(0x3a, 0, 0x80, 0x80, 1, 0x0b)    // i32.store8 offset=16384 end
	op(0x20, i, 0x41, 1, 0x6a, 0x21, i) // i = i+1
	op(0x0c, 0, 0x0b, 0x0b)             // br $nl end end
	store(0, 16384)
	i32(4)
	op(0x20, n, 0x36, 2, 0)
	i32(1)
	i32(0)
	i32(1)
	i32(12)
	call(fdWrite)
	op(0x1a, 0x0b) // drop end

	body := append([]byte{1, 2, 0x7f}, c...) // locals: 2 × i32
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = section(m, 1, []byte{3, // types
		0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f, // (i32 i32 i32 i32) -> i32
		0x60, 2, 0x7f, 0x7f, 1, 0x7f, // (i32 i32) -> i32
		0x60, 0, 0}) // () -> ()
	imports := []byte{4}
	for _, f := range []struct {
		name string
		typ  byte
	}{{"fd_read", 0}, {"fd_write", 0}, {"args_sizes_get", 1}, {"args_get", 1}} {
		imports = append(append(append(imports, name("wasi_snapshot_preview1")...), name(f.name)...), 0, f.typ)
	}
	m = section(m, 2, imports)
	m = section(m, 3, []byte{1, 2})    // _start has type 2
	m = section(m, 5, []byte{1, 0, 1}) // memory: min 1 page
	exports := append(append([]byte{2}, name("_start")...), 0, start)
	exports = append(append(exports, name("memory")...), 2, 0)
	m = section(m, 7, exports)
	return section(m, 10, append([]byte{1}, vec(body)...))
}

// sleb is v in signed LEB128.
func sleb(v int32) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if v == 0 && b&0x40 == 0 || v == -1 && b&0x40 != 0 {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}
