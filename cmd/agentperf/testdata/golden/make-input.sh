#!/bin/sh
# make-input.sh BINARY OUT: run the golden-folder fixture once (TestGoldenFolder's
# input): a 2-shard run of the synthetic corpus against one simulator on
# loopback, each shard in OUT/shard-I. The records carry wall-clock
# latencies, so this is run once and its folders are committed as input/;
# the test only finishes them (no live run). The shard logs go to OUT/*.out. Nothing here reads recorded
# traces: the corpus is --public-dataset synthetic.
set -eu
bin=$1 out=$2
mkdir -p "$out"
simport=$((30000 + $$ % 5000)) rdv=$((20000 + $$ % 5000))
"$bin" sim --port $simport --model demo --gpu-metrics dcgm --quiet >"$out/sim.log" 2>&1 &
simpid=$!
trap 'kill $simpid' EXIT
sleep 1
for i in 0 1; do
	"$bin" profile --url http://127.0.0.1:$simport --model demo --tokenizer builtin --streaming \
		--public-dataset synthetic:seed=3,traces=6,min-turns=8,max-turns=16,time-scale=0.02 \
		--concurrency 4 --benchmark-duration 3 --random-seed 7 --slice-duration 1 \
		--ui-type none --shard $i/2 --shard-rendezvous 127.0.0.1:$rdv \
		--output-artifact-dir "$out/shard-{shard}" >"$out/shard-$i.out" 2>&1 &
done
wait %2 %3
