#!/usr/bin/env bash
# One server against thousands of simulated workers (docs/scale.md), in six runs:
#   1. the sweep: 10, 100, 1,000 and 10,000 workers, a 100,000-unit no-op job each
#      → sweep.json and the plots (throughput, register, api, memory, idle .svg);
#   2. the issue's headline run: 10,000 workers, a 1,000,000-unit job → results.json, the
#      server at the bench's default nice -10, and the same with the server at the fleet's
#      priority (--server-nice 0) → results-nice0.json;
#   3. ten million units on 10,000 workers, the server killed (SIGKILL) and started
#      again at half the job → 10m.json (about 6 minutes here);
#   4. idle cost of 10,000 workers with the associations' liveness bound at 12 s, not 3 s
#      → liveness.json (a job of 10,000 units, to have one);
#   5. the list pages beside the dispatch loop and the idle fleet: 10,000 workers, a
#      300,000-unit job (enough to measure the pages' p99 while it runs) → api.json;
#   6. the idle fleet: 10,000 workers, a 1,000-unit job → idle.json (idle-before.json is the
#      same command with the binary of main before idle bounds, commit ae1740b).
# Each file records its provenance (commit, kernel, Go, flags, load). The machine is
# shared: each file's load_avg says how busy it was when the run began.
# Usage: docs/experiments/scale/run.sh [sweep|1m|10m|liveness|api|idle]...   (default: all six)
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=docs/experiments/scale
tmp=$(mktemp -d /var/tmp/braid-scaleexp-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# The commit, as make build stamps it: results.json's provenance names it.
go build -ldflags "-X github.com/braidhq/braid/version.Version=$(git describe --always --dirty --abbrev=12)" -o "$tmp/braid" ./cmd/braid
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(sweep 1m 10m liveness api idle)
for r in "${runs[@]}"; do
	echo "=== $r $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	case $r in
	sweep) "$tmp/braid" bench scale --sweep 10,100,1000,10000 --units 100000 --json-out "$OUT/sweep.json" --plot "$OUT" ;;
	1m)
		"$tmp/braid" bench scale --workers 10000 --units 1000000 --json-out "$OUT/results.json"
		"$tmp/braid" bench scale --workers 10000 --units 1000000 --server-nice 0 --json-out "$OUT/results-nice0.json"
		;;
	10m) "$tmp/braid" bench scale --workers 10000 --units 10000000 --restart-at 0.5 --timeout 30m --json-out "$OUT/10m.json" ;;
	liveness) "$tmp/braid" bench scale --workers 10000 --units 10000 --liveness 12s --json-out "$OUT/liveness.json" ;;
	api) "$tmp/braid" bench scale --workers 10000 --units 300000 --json-out "$OUT/api.json" ;;
	idle) "$tmp/braid" bench scale --workers 10000 --units 1000 --json-out "$OUT/idle.json" ;;
	*) echo "unknown run $r (want sweep, 1m, 10m, liveness, api or idle)" >&2; exit 2 ;;
	esac
done
