#!/usr/bin/env bash
# apifuzz.sh: fuzz braid's HTTP API from its OpenAPI document (server/openapi.json)
# with schemathesis, against a real server and worker built from this tree.
#
# Passes, each against the same live server:
#   1. admin token (and the worker token): every operation but revoking tokens,
#      all phases (examples, coverage, fuzzing, stateful);
#   2. the same with schemathesis's default checks, which are all of them: also
#      that a request the document refuses is refused and one it allows is taken
#      (bench/apifuzz/schemathesis.toml lists what a schema cannot say);
#   3. a read token: every operation, fuzzing only (403s are documented);
#   4. no token: every operation, fuzzing only (401s are documented);
#   5. admin token, the token operations alone: last, since revoking the admin
#      token ends what the admin token can test.
# Checks of the other passes: no 5xx, every status, Content-Type, header and
# body as documented, undeclared methods answer 405 with Allow, auth is
# enforced where declared, deleted resources are gone and created ones are there. Afterwards the server
# and worker must still run, /healthz must answer, neither log may hold a
# panic or a data race, and no job may have failed (submit refuses what
# cannot run).
#
# Environment: APIFUZZ_EXAMPLES (examples per operation and phase, default 10),
# APIFUZZ_SEED (hypothesis seed, default 1: a run is reproducible),
# APIFUZZ_VENV (the venv with schemathesis; made if missing; default: one per version
# of bench/apifuzz/requirements.txt under ~/.cache/braid),
# APIFUZZ_KEEP=1 (keep the temp dir with logs and reports), GO, PYTHON.
# `make test-api` runs it short; `make fuzz-api APIFUZZ_EXAMPLES=500` longer.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
GO=${GO:-go}
PYTHON=${PYTHON:-python3}
examples=${APIFUZZ_EXAMPLES:-10}
seed=${APIFUZZ_SEED:-1}
secret=apifuzz-secret

tmp=$(mktemp -d "${TMPDIR:-/tmp}/braid-apifuzz.XXXXXX")
pids=()
cleanup() {
	local rc=$?
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [ "$rc" != 0 ] && [ -f "$tmp/server.log" ]; then
		echo "--- last lines of the server's log ($tmp/server.log):"
		tail -n 20 "$tmp/server.log"
	fi
	if [ "${APIFUZZ_KEEP:-}" = 1 ]; then echo "apifuzz: kept $tmp"; else rm -rf "$tmp"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start=$(date +%s)
$GO build -o "$tmp/braid" "$root/cmd/braid"

# The venv is kept between runs, one per version of requirements.txt.
req=$root/bench/apifuzz/requirements.txt
venv=${APIFUZZ_VENV:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/braid/apifuzz-$(sha256sum "$req" | cut -c1-12)}
if [ ! -f "$venv/.complete" ]; then
	echo "apifuzz: installing schemathesis into $venv"
	[ -n "${APIFUZZ_VENV:-}" ] || rm -rf "$venv" # a cached venv that a killed run left half made
	"$PYTHON" -m venv "$venv"
	# requirements.txt pins every package, dependencies included: no resolving, wheels only.
	"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: -r "$req"
	touch "$venv/.complete"
fi

port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
# Uploads are bounded (16 MiB), yet a repeat job's manifest (up to 100,000
# units of about 130 bytes) must still fit.
BRAID_SECRET=$secret "$tmp/braid" server --listen "127.0.0.1:$port" --data "$tmp/data" \
	--max-object 16777216 --drain-timeout 0s >"$tmp/server.log" 2>&1 &
pids+=($!)
server=$!
for _ in $(seq 100); do
	curl -sf "$url/healthz" >/dev/null && [ -s "$tmp/data/admin.token" ] && break
	sleep 0.1
done
curl -sf "$url/healthz" >/dev/null || { echo "apifuzz: the server did not come up"; exit 1; }
BRAID_SECRET=$secret "$tmp/braid" worker --server "$url" --threads 2 --drain-timeout 0s >"$tmp/worker.log" 2>&1 &
pids+=($!)
worker=$!

admin=$(cat "$tmp/data/admin.token")
read=$(BRAID_TOKEN=$admin "$tmp/braid" token create --role read --name apifuzz-read --server "$url" 2>/dev/null)
[ -n "$read" ] || { echo "apifuzz: could not make a read token"; exit 1; }
# An image for jobs to work on: the config names it, as @APIFUZZ_INPUT@.
"$PYTHON" -c 'import sys; sys.path.insert(0, sys.argv[1]); import pngs; sys.stdout.buffer.write(pngs.make_png(24, 16))' \
	"$root/clients/python/tests" >"$tmp/input.png"
input=$(BRAID_TOKEN=$admin "$tmp/braid" put --server "$url" "$tmp/input.png")
sed "s/@APIFUZZ_INPUT@/$input/" "$root/bench/apifuzz/schemathesis.toml" >"$tmp/schemathesis.toml"
wtoken=$("$PYTHON" -c 'import hashlib, hmac, sys; print(hmac.new(sys.argv[1].encode(), b"braid worker control v1", hashlib.sha256).hexdigest())' "$secret")

checks=not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance
checks=$checks,response_schema_conformance,unsupported_method,allow_header_conformance,ignored_auth
checks=$checks,use_after_free,ensure_resource_availability
# st runs one pass, with the checks in $checks (empty: schemathesis's
# defaults, which are all of them). In the background, so that a signal to
# this script ends the wait at once and the trap stops everything.
st() {
	local name=$1
	shift
	echo "=== apifuzz: $name"
	(cd "$tmp" && exec "$venv/bin/st" --config-file "$tmp/schemathesis.toml" run \
		"$root/server/openapi.json" --url "$url" ${checks:+--checks "$checks"} --seed "$seed" \
		--max-examples "$examples" --no-color --workers 1 "$@") &
	pids+=($!)
	wait "$!" || {
		echo "apifuzz: pass '$name' failed (seed $seed; APIFUZZ_SEED=$seed reproduces it)"
		return 1
	}
}
passed=0 failed=0
run_pass() { if st "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi; }
run_pass "admin token" -H "Authorization: Bearer $admin" -H "X-Braid-Worker-Token: $wtoken" \
	--exclude-name 'DELETE /v1/tokens/{id}'
checks='' run_pass "admin token, schemathesis's default checks" -H "Authorization: Bearer $admin" -H "X-Braid-Worker-Token: $wtoken" \
	--exclude-name 'DELETE /v1/tokens/{id}'
run_pass "read token" -H "Authorization: Bearer $read" --phases fuzzing
run_pass "no token" --phases fuzzing
run_pass "token revocation" -H "Authorization: Bearer $admin" --include-path-regex '^/v1/tokens'

alive=1
for p in "$server" "$worker"; do
	kill -0 "$p" 2>/dev/null || { echo "apifuzz: process $p (server $server, worker $worker) has died"; alive=0; }
done
curl -sf "$url/healthz" >/dev/null || { echo "apifuzz: /healthz does not answer after the run"; alive=0; }
if grep -nE '^panic:|fatal error:|WARNING: DATA RACE|http: panic serving' "$tmp/server.log" "$tmp/worker.log"; then
	echo "apifuzz: a panic or race in the logs above"
	alive=0
fi
# Jobs run on the uploaded image or on bytes the fuzzer uploaded; what
# cannot run is for submit to refuse, so a job that fails is a finding.
if grep -n 'msg="job failed"' "$tmp/server.log"; then
	echo "apifuzz: the server accepted the jobs above and they failed: submit should have refused them"
	alive=0
fi
if [ "$alive" = 1 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
echo "apifuzz: seed $seed, $examples examples per operation, $(($(date +%s) - start)) s"
echo "apifuzz: $passed passed, $failed failed"
[ "$failed" = 0 ]
