#!/usr/bin/env bash
# Loopback ceiling of the simulator: `agentperf sim --zero-latency` driven by
# wrk with a small chat POST, non-streaming and streaming (~40 SSE events).
# Prints a markdown table of requests/s. Later client numbers compare with
# these (same machine, same server: "client rate / wrk rate").
#
# Usage: bench/sim_wrk.sh [duration=5s] [connections=64] [threads=1]
# Env:   PORT (default 18180), AGENTPERF (a prebuilt binary; default: go build)
set -euo pipefail

dur=${1:-5s}
conns=${2:-64}
threads=${3:-1}
port=${PORT:-18180}
root=$(cd "$(dirname "$0")/.." && pwd)

if ! command -v wrk >/dev/null 2>&1; then
  echo "installing wrk (apt-get)..." >&2
  if ! apt-get install -y wrk >/dev/null 2>&1; then
    apt-get update >/dev/null && apt-get install -y wrk >/dev/null
  fi
fi

bin=${AGENTPERF:-}
if [ -z "$bin" ]; then
  bin=$(mktemp -d)/agentperf
  (cd "$root" && go build -o "$bin" ./cmd/agentperf)
fi

"$bin" sim --zero-latency --quiet --port "$port" >/dev/null 2>&1 &
pid=$!
trap 'kill -INT $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.1
done

run() { # name stream tokens
  local out rps lat
  out=$(SIM_STREAM=$2 SIM_TOKENS=$3 wrk -t"$threads" -c"$conns" -d"$dur" --latency \
    -s "$root/bench/sim_chat.lua" "http://127.0.0.1:$port/v1/chat/completions")
  rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  lat=$(awk '/^    Latency/ {print $2}' <<<"$out")
  p99=$(awk '/^ +99%/ {print $2}' <<<"$out")
  non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$3" "$rps" "$lat" "$p99" "${non2xx:-0}"
}

echo "wrk -t$threads -c$conns -d$dur against agentperf sim --zero-latency ($(nproc) cores, client and server share them)"
echo
echo "| request | output tokens | requests/s | latency avg | latency p99 | non-2xx |"
echo "|---|---|---|---|---|---|"
run "chat, non-streaming" 0 8
run "chat, streaming (SSE)" 1 40
