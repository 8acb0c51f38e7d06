#!/bin/sh
# Builds versitygw, the S3 server the S3 store's tests and e2e tests run
# (store/s3/s3test starts it over a temporary directory), into
# ~/.cache/braid/bin/versitygw-VERSION once, with `go install` from the Go
# module proxy, and prints the binary's path. A build that fails prints a
# loud message on stderr and nothing on stdout: the S3 tests then skip,
# saying so.
set -u
V=v1.8.0
dir="${BRAID_CACHE:-$HOME/.cache/braid}/bin"
bin="$dir/versitygw-$V"
if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi
GO="${GO:-go}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "versitygw: building $V into $bin (once; a few minutes)" >&2
# Outside braid's module, so that its go.mod does not constrain the build.
if (cd "$tmp" && GOBIN="$tmp/bin" GOFLAGS= "$GO" install "github.com/versity/versitygw/cmd/versitygw@$V") >&2 &&
	mkdir -p "$dir" && mv "$tmp/bin/versitygw" "$bin"; then
	echo "$bin"
	exit 0
fi
echo "=====================================================================" >&2
echo "versitygw: BUILD FAILED: the S3 store's tests will be SKIPPED" >&2
echo "=====================================================================" >&2
exit 0
