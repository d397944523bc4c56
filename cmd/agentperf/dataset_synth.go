package main

import (
	"context"
	"fmt"

	"github.com/agentperf/agentperf/dataset"
)

func init() {
	registerDataset(command{name: "synth", summary: "generate a synthetic weka-format corpus", run: runDatasetSynth})
}

const datasetSynthExamples = `  # the corpus --public-dataset synthetic loads (seed 0, 40 traces), written to a file
  agentperf dataset synth -o synth.jsonl

  # 200 traces with subagents, zstd-compressed
  agentperf dataset synth --seed 7 --traces 200 --subagents -o synth-200.jsonl.zst

  # subagents heavier than the with-subagents corpora (60% of the requests)
  agentperf dataset synth --subagents --subagent-share 0.6 -o heavy.jsonl

  # short traces that fit a 32k context window, times scaled down 10x
  agentperf dataset synth --max-context 32768 --min-turns 10 --max-turns 20 --time-scale 0.1 -o small.jsonl

  # inspect what was generated
  agentperf dataset info --input-file synth.jsonl`

func runDatasetSynth(_ context.Context, args []string, io stdio) error {
	fs := newFlagSet("dataset synth", "dataset synth [flags] -o FILE", datasetSynthExamples, io.out)
	var opt dataset.SynthOptions
	fs.Int64Var(&opt.Seed, "seed", 0, "random seed: the same flags and seed give a byte-identical corpus (0 is the seed of --public-dataset synthetic)")
	fs.IntVar(&opt.Traces, "traces", 40, "number of traces")
	fs.BoolVar(&opt.Subagents, "subagents", false, "add subagent entries (Task calls with their own requests: joined, background, parallel) to about 80% of the traces")
	fs.Float64Var(&opt.SubagentShare, "subagent-share", dataset.DefaultSubagentShare, "with --subagents: the share of all requests that are inside subagents")
	fs.IntVar(&opt.MinTurns, "min-turns", 30, "fewest parent requests per trace")
	fs.IntVar(&opt.MaxTurns, "max-turns", 120, "most parent requests per trace")
	fs.IntVar(&opt.MaxContext, "max-context", 0, "keep every request's in+out at or below this many tokens (0: no limit; traces compact at ≈160k tokens)")
	fs.Float64Var(&opt.TimeScale, "time-scale", 1, "multiply recorded think and API times (1: real-corpus magnitudes; at most 1000)")
	out := fs.StringP("output", "o", "", "output file (.jsonl, .jsonl.zst or .jsonl.gz; - for stdout)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("dataset synth: unexpected argument %q", fs.Arg(0))
	case *out == "":
		return usagef("dataset synth: -o FILE is required (use -o - for stdout)")
	case opt.Traces <= 0:
		return usagef("dataset synth: --traces must be positive, got %d", opt.Traces)
	case opt.MinTurns <= 0 || opt.MaxTurns < opt.MinTurns:
		return usagef("dataset synth: need 0 < --min-turns ≤ --max-turns, got %d and %d", opt.MinTurns, opt.MaxTurns)
	case opt.MaxContext < 0 || (opt.MaxContext > 0 && opt.MaxContext < 24000):
		return usagef("dataset synth: --max-context %d is too small: a trace's system prefix alone is up to 24k tokens", opt.MaxContext)
	case !(opt.TimeScale > 0 && opt.TimeScale <= dataset.MaxSynthTimeScale):
		return usagef("dataset synth: --time-scale must be in (0, %d], got %v", dataset.MaxSynthTimeScale, opt.TimeScale)
	case fs.Changed("subagent-share") && !opt.Subagents:
		return usagef("dataset synth: --subagent-share is the share of requests in subagents and needs --subagents")
	case !(opt.SubagentShare > 0 && opt.SubagentShare <= dataset.MaxSubagentShare):
		return usagef("dataset synth: --subagent-share must be in (0, %g], got %v", dataset.MaxSubagentShare, opt.SubagentShare)
	case *out != "-" && dataset.CheckJSONLPath(*out) != nil:
		return usagef("dataset synth: output %v", dataset.CheckJSONLPath(*out))
	}
	// A file is written to a temporary name and renamed, so a failed write
	// never leaves a truncated corpus behind.
	traces := dataset.Synthesize(opt)
	where, msgTo := *out, io.out
	if where == "-" {
		if err := dataset.WriteJSONL(io.out, traces); err != nil {
			return err
		}
		where, msgTo = "stdout", io.err
	} else if err := dataset.WriteJSONLFile(where, traces); err != nil {
		return fmt.Errorf("dataset synth: %w", err)
	}
	st := dataset.ComputeStats(traces)
	fmt.Fprintf(msgTo, "wrote %d traces (%d parent requests, %d subagent requests in %d entries, %d hash ids) to %s\n",
		st.Traces, st.ParentRequests, st.SubagentRequests, st.SubagentEntries, st.HashIDs, where)
	return nil
}
