#!/bin/sh
# Installs the system packages `make test` needs, when they are missing and
# this runs as root (CI, a fresh container); otherwise it only says what is
# missing, and the tests that need it skip with the same message.
#   promtool (Debian's prometheus package): the /metrics lint in
#   server/metrics_test.go runs `promtool check metrics`.
#   chromium: e2e/ui_test.go drives the web dashboard in headless Chromium.
#   clang, lld, wasi-libc, libclang-rt-dev-wasm32: the C user-operation example
#   (examples/ops/cblur; mk/wasi-c.sh builds it for make examples and its test).
#   iperf3: `braid bench fair --against iperf3:CC` runs it beside braid's
#   association, and bench/fair's iperf3 test checks that it reads it right.
set -eu
need_pkgs=""
command -v promtool >/dev/null || need_pkgs="$need_pkgs prometheus"
command -v chromium >/dev/null || need_pkgs="$need_pkgs chromium"
sh "$(dirname "$0")/wasi-c.sh" probe || need_pkgs="$need_pkgs clang lld wasi-libc libclang-rt-dev-wasm32"
command -v iperf3 >/dev/null || need_pkgs="$need_pkgs iperf3"
[ -z "$need_pkgs" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
	echo "test-deps: missing$need_pkgs (not root or no apt-get: install it yourself; the tests that need it skip)"
	exit 0
fi
echo "test-deps: installing$need_pkgs"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need_pkgs >/dev/null
