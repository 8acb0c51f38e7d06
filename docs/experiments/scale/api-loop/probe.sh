#!/usr/bin/env bash
# The run with a look inside the server 6 s into the job: a 3 s runtime trace
# (trace.out, for schedtrace.py) or an 8 s CPU profile (cpu.pb); PROBE_AFTER=S looks S seconds
# into the job instead. Run it under the bench lock:
#   flock /work/wt/_notes/bench.lock docs/experiments/scale/api-loop/probe.sh trace|profile OUTDIR ./bin/braid
set -euo pipefail
what=$1 out=$2 bin=$3
shift 3
mkdir -p "$out"
( "$bin" bench scale --workers 10000 --units 1000000 --json-out "$out/run.json" "$@" >"$out/bench.out" 2>&1 ) &
bench=$!
dbg=
for _ in $(seq 600); do # the server's --pprof address, from the bench's log
	dbg=$(grep -o "profiles at http://[0-9.:]*" "$out/bench.out" | sed "s|profiles at http://||" || true)
	[ -n "$dbg" ] && break
	sleep 0.5
done
for _ in $(seq 600); do
	grep -q submitted "$out/bench.out" && break
	sleep 0.5
done
sleep "${PROBE_AFTER:-6}" # seconds into the job
case $what in
trace) curl -s -m 20 "http://$dbg/debug/pprof/trace?seconds=3" >"$out/trace.out" ;;
profile) curl -s -m 30 "http://$dbg/debug/pprof/profile?seconds=8" >"$out/cpu.pb" ;;
esac
wait "$bench"
