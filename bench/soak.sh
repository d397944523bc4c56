#!/usr/bin/env bash
# Soak: the replay engine at 2,000 lanes against the in-process simulator
# with a 1 % fault rate (500, 503, reset before headers, reset mid-stream,
# malformed SSE, stream error event, 2 s stall), sampling goroutines, live
# heap and RSS every 10 s. Prints a table, the accounting and a PASS/FAIL
# verdict (exit status 1 on FAIL). See bench/soak/main.go.
#
# Usage: bench/soak.sh [duration=10m] [lanes=2000] [extra flags of bench/soak…]
#   e.g. bench/soak.sh 3m            # a shorter run
#        bench/soak.sh 10m 2000 -sample 5s -fault-rate 0.02
set -euo pipefail
dur=${1:-10m}
lanes=${2:-2000}
shift $(( $# > 2 ? 2 : $# ))
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(mktemp -d)/soak
trap 'rm -rf "$(dirname "$bin")"' EXIT
(cd "$root" && go build -o "$bin" ./bench/soak)
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
"$bin" -lanes "$lanes" -duration "$dur" -sample 10s "$@"
