#!/bin/sh
# Builds a C program into a WebAssembly user operation (WASI preview 1, the
# command ABI of docs/user-ops.md) with clang and wasi-libc. `make examples`
# and the tests (userop/wasmtest.BuildC) build with it, so both use these flags.
#   sh mk/wasi-c.sh probe           exit 0 if clang builds WASI programs, 3 if not
#   sh mk/wasi-c.sh build OUT SRC   build SRC into OUT; without the toolchain, say
#                                   what to install and exit 3 (make examples skips)
# WASI_CC names another clang; WASI_EXTRA_CFLAGS adds flags (e.g. -DHOT= builds
# cblur without its unrolling, to measure what that is worth).
set -eu
CC=${WASI_CC:-clang}
# -msimd128: clang vectorizes the loops with WebAssembly SIMD, which
# braid's runtime (wazero) compiles to SSE; -mbulk-memory: memcpy is one
# instruction, not a loop.
CFLAGS="--target=wasm32-wasi -O3 -msimd128 -mbulk-memory -Wall -Wextra -Wl,--strip-all ${WASI_EXTRA_CFLAGS:-}"
missing="clang for WebAssembly with wasi-libc is not installed (Debian: apt-get install clang lld wasi-libc libclang-rt-dev-wasm32; make test-deps does, as root)"

probe() {
	command -v "$CC" >/dev/null 2>&1 || return 1
	dir=$(mktemp -d)
	printf '#include <math.h>\n#include <stdio.h>\nint main(int c, char **v) { (void)v; printf("%%g\\n", exp(c)); return 0; }\n' >"$dir/p.c"
	ok=0
	$CC $CFLAGS -o "$dir/p.wasm" "$dir/p.c" -lm >/dev/null 2>&1 || ok=1
	rm -rf "$dir"
	return $ok
}

case "${1:-}" in
probe)
	probe || exit 3
	;;
build)
	[ $# = 3 ] || { echo "usage: sh mk/wasi-c.sh build OUT SRC" >&2; exit 2; }
	if ! probe; then
		echo "skipped $2: $missing" >&2
		exit 3
	fi
	echo "$CC $CFLAGS -o $2 $3 -lm"
	$CC $CFLAGS -o "$2" "$3" -lm
	;;
*)
	echo "usage: sh mk/wasi-c.sh probe | build OUT SRC" >&2
	exit 2
	;;
esac
