#!/bin/bash
# One run: tcp and sctp through the bed, with perf recording the whole host
# (cpu-clock, 499 Hz, call graphs), then hostcpu.py's attribution.
# Usage: run.sh BRAID_BINARY OUT_PREFIX   (root; take the bench lock around it)
set -eu
bin=$1 out=$2
here=$(dirname "$0")
perf record -a -g -F 499 -o "$out.data" -- \
	"$bin" bench transport --net-wait 20m --net "rtt=50ms,loss=1%,rate=100M,cc=bbr" \
	--transport tcp,sctp --streams 4 --mode bulk --duration 10s --json-out "$out.json" >"$out.out" 2>&1
python3 "$here/hostcpu.py" "$out.data" "$out.json" >"$out.host.json"
cat "$out.host.json"
