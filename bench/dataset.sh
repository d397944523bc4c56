#!/usr/bin/env bash
# Dataset start-up benchmarks on the 200-trace corpus in ../shared/traces:
# cold cache build (read + select + write + map), warm open (key resolution
# through the stat index + map + index validation), warm open of a corpus
# ten times larger, a full verification, and materialising one trace.
# Prints a markdown table (ms per operation, resident memory after open).
# CPU ms/op (user+system time of the process per operation) is reported
# beside wall time because this machine is shared: wall time includes
# waiting for a core.
# Targets (README.md, "Performance"): cold build well under 2 s, warm open
# under 20 ms and flat in corpus size. Not part of CI.
#
# Usage: bench/dataset.sh [count=3]
set -euo pipefail

count=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -e "$root/../shared/traces/kvct-200.jsonl.zst" ]; then
  echo "bench/dataset.sh: ../shared/traces/kvct-200.jsonl.zst not found next to the module" >&2
  exit 1
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT

cd "$root"
go test ./dataset -run '^$' -count "$count" \
  -bench '^(BenchmarkOpenCold|BenchmarkOpenWarm|BenchmarkOpenWarm10x|BenchmarkVerifyCache|BenchmarkTrace)$' \
  -benchtime 1x >/dev/null 2>&1 || true # warm the build cache
go test ./dataset -run '^$' -count "$count" -benchmem \
  -bench '^(BenchmarkOpenCold|BenchmarkOpenWarm|BenchmarkOpenWarm10x|BenchmarkVerifyCache|BenchmarkTrace)$' | tee "$out" >&2

echo
echo "| benchmark | wall ms/op (median of $count) | CPU ms/op | allocs/op | RSS after open (MB) | RSS growth (MB) | file (MB) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
awk '
/^Benchmark/ {
  name=$1; sub(/-[0-9]+$/, "", name)
  for (i = 2; i < NF; i++) {
    if ($(i+1) == "ns/op") ns[name] = ns[name] " " $i
    if ($(i+1) == "allocs/op") al[name] = $i
    if ($(i+1) == "cpu-ms/op") cpu[name] = cpu[name] " " $i
    if ($(i+1) == "rss-MB") rss[name] = $i
    if ($(i+1) == "rss-growth-MB") gr[name] = $i
    if ($(i+1) == "file-MB") fm[name] = $i
  }
  if (!(name in seen)) { seen[name] = 1; order[n++] = name }
}
function median(list,    v, m, i, j, t) {
  m = split(substr(list, 2), v, " ")
  if (m == 0) return ""
  for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
  return (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
}
END {
  for (k = 0; k < n; k++) {
    name = order[k]
    c = (name in cpu) ? sprintf("%.3f", median(cpu[name])) : ""
    printf "| %s | %.3f | %s | %s | %s | %s | %s |\n", name, median(ns[name]) / 1e6, c, al[name], (name in rss) ? rss[name] : "", (name in gr) ? gr[name] : "", (name in fm) ? fm[name] : ""
  }
}' "$out"
