#!/usr/bin/env bash
# What the S3 store costs, against the local store, in one run (docs/storage.md):
#   1. braid bench overhead, 10,000 units of 19 KiB, repeat (one input) and --inputs
#      (an object per unit, read from the store per unit), local store vs --store s3://;
#   2. a 1 GiB object put and got through the HTTP API (braid put / braid get), each store.
# The S3 server is versitygw over a temporary directory (mk/versitygw.sh builds it), on
# loopback, on the same disk as the local store. Writes results.json beside this script.
# Usage: docs/experiments/s3/run.sh [RUNS]   (RUNS per case, default 3)
set -euo pipefail
cd "$(dirname "$0")/../../.."
RUNS=${1:-3}
OUT=docs/experiments/s3
tmp=$(mktemp -d /var/tmp/braid-s3exp-XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
go build -o "$tmp/braid" ./cmd/braid
gw=$(GO=go sh mk/versitygw.sh)
[ -n "$gw" ] || { echo "no versitygw" >&2; exit 1; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$tmp/gw/braidbkt" "$tmp/meta"
"$gw" --access braidexp --secret braidexpsecret0123 --port "127.0.0.1:$port" --quiet --health /health posix --sidecar "$tmp/meta" "$tmp/gw" &
pids+=($!)
export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ACCESS_KEY_ID=braidexp AWS_SECRET_ACCESS_KEY=braidexpsecret0123 AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
for _ in $(seq 100); do curl -sf "$AWS_ENDPOINT_URL/health" >/dev/null && break; sleep 0.1; done

overhead() { # store-flag... → JSON array on stdout
	"$tmp/braid" bench overhead --transport sctp --units 10000 --size 19456 --runs "$RUNS" --json "$@"
}
echo "overhead: local, repeat" >&2;  overhead > "$tmp/ov-local-repeat.json"
echo "overhead: s3, repeat" >&2;     overhead --store s3://braidbkt/bench > "$tmp/ov-s3-repeat.json"
echo "overhead: local, inputs" >&2;  overhead --inputs > "$tmp/ov-local-inputs.json"
echo "overhead: s3, inputs" >&2;     overhead --inputs --store s3://braidbkt/bench > "$tmp/ov-s3-inputs.json"

head -c $((1 << 30)) /dev/urandom > "$tmp/big"
large() { # name store-flag... → one JSON line per run
	local name=$1; shift
	local data="$tmp/data-$name" sport
	sport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	"$tmp/braid" server --listen "127.0.0.1:$sport" --data "$data" --auth=false --log-level warn "$@" 2>"$tmp/server-$name.log" &
	local spid=$!
	for _ in $(seq 200); do curl -sf "http://127.0.0.1:$sport/healthz" >/dev/null && break; sleep 0.1; done
	for r in $(seq "$RUNS"); do
		# a fresh object each run: the first byte differs
		printf '%02x' "$r" | xxd -r -p | dd of="$tmp/big" bs=1 count=1 conv=notrunc status=none
		local t0 t1 t2 id
		t0=$(date +%s.%N)
		id=$("$tmp/braid" put --server "http://127.0.0.1:$sport" "$tmp/big")
		t1=$(date +%s.%N)
		"$tmp/braid" get --server "http://127.0.0.1:$sport" "$id" -o /dev/null
		t2=$(date +%s.%N)
		python3 -c "import json,sys; a,b,c=map(float,sys.argv[2:5]); print(json.dumps({'store':sys.argv[1],'bytes':1<<30,'put_s':round(b-a,3),'get_s':round(c-b,3),'put_mib_s':round(1024/(b-a),1),'get_mib_s':round(1024/(c-b),1)}))" "$name" "$t0" "$t1" "$t2"
	done
	kill "$spid"; wait "$spid" 2>/dev/null || true
}
echo "1 GiB: local" >&2; large local > "$tmp/large.jsonl"
echo "1 GiB: s3" >&2;    large s3 --store s3://braidbkt/large >> "$tmp/large.jsonl"

python3 - "$tmp" "$OUT/results.json" "$RUNS" <<'PY'
import json, subprocess, sys, platform
tmp, out, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def load(n): return json.load(open(f"{tmp}/{n}.json"))
res = {
  "provenance": {"commit": subprocess.run(["git","describe","--always","--dirty"],capture_output=True,text=True).stdout.strip(),
                 "kernel": platform.release(),
                 "go": subprocess.run(["go","version"],capture_output=True,text=True).stdout.strip(),
                 "flags": ["docs/experiments/s3/run.sh", str(runs)]},
  "experiment": "s3 store cost against the local store",
  "command": f"docs/experiments/s3/run.sh {runs}",
  "s3_server": "versitygw v1.8.0 posix, loopback, same disk",
  "flags": {"overhead": "--transport sctp --units 10000 --size 19456 --runs %d [--inputs] [--store s3://braidbkt/bench]" % runs,
            "large": "braid put / braid get of 1 GiB, braid server --auth=false [--store s3://braidbkt/large]"},
  "overhead": {k: load("ov-"+k) for k in ["local-repeat","s3-repeat","local-inputs","s3-inputs"]},
  "large": [json.loads(l) for l in open(f"{tmp}/large.jsonl")],
  "note": "2-core machine shared with other work while measured",
}
json.dump(res, open(out,"w"), indent=1)
print(out)
PY
