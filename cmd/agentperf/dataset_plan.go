package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentperf/agentperf/plan"
	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/timing"
)

func init() {
	registerDataset(command{name: "plan", summary: "print how a generation rebuilds each trace into sessions (root, flat chains, subagents), before any request is sent", run: runDatasetPlan})
}

const datasetPlanExamples = `  # the sessions AgentX v1.0 (the default) replays, and the totals
  agentperf dataset plan --input-file traces.jsonl.zst

  # one JSON object per trace
  agentperf dataset plan --input-file traces.jsonl.zst --format json | jq -c '.sessions[] | select(.kind == "flat")'

  # the loader's escape hatch: every top-level request in the root
  AIPERF_DATASET_WEKA_SPLIT_FLATTENED_AGENTS=false agentperf dataset plan --input-file traces.jsonl.zst

  # what v0.3 replayed
  agentperf dataset plan --input-file traces.jsonl.zst --scenario inferencex-agentx-mvp@v0.3

The corpus is opened and selected like 'agentperf profile' opens it (same flags, same dataset
cache); the generation comes from --scenario NAME@GEN, --agentx-generation or $` + envGeneration + `,
and v1.0's session layout from the AIPERF_DATASET_WEKA_* variables (docs/replay.md).`

func runDatasetPlan(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("dataset plan", "dataset plan (--input-file PATH | --public-dataset ALIAS | --hf-dataset ORG/NAME[@REV]) [flags]", datasetPlanExamples, io.err)
	df := addDatasetFlags(fs)
	scen := fs.String("scenario", "", "the scenario preset NAME[@GEN] whose generation to show (e.g. "+scenario.NameAgentXMVP+"@v0.3)")
	gen := fs.String("agentx-generation", "", "the AgentX generation: "+strings.Join(timing.GenerationNames(), ", ")+" (default "+timing.DefaultGeneration+"; also $"+envGeneration+")")
	idleCap := fs.Float64("trace-idle-gap-cap-seconds", -1, "v0.3's trace idle-gap warp, which moves its joins (default: the generation's, 60 for v0.3)")
	format := fs.String("format", "table", "output format: table or json (one object per trace)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("dataset plan: unexpected argument %q (pass the corpus with --input-file)", fs.Arg(0))
	}
	if *format != "table" && *format != "json" {
		return usagef("dataset plan: --format %q: use table or json", *format)
	}
	_, g, err := run.GenerationChoice{Scenario: *scen, Flag: *gen, Env: df.getenv(envGeneration)}.Resolve()
	if err != nil {
		return asUsage(err)
	}
	chains, err := run.ChainOptionsFromEnv(df.getenv)
	if err != nil {
		return asUsage(err)
	}
	// The plans a run would build: the generation with its defaults, the
	// idle-gap cap as given.
	spec := run.NewSpec()
	spec.ApplyGeneration(g, *idleCap >= 0, true)
	if *idleCap >= 0 {
		spec.Replay.TraceIdleGapCap = seconds(*idleCap)
	}
	opt := spec.PlanOptions()
	corpus, err := df.open(ctx, io)
	if err != nil {
		return err
	}
	defer corpus.Close()
	var rows []plan.Layout
	enc := json.NewEncoder(io.out)
	tot, err := plan.Layouts(corpus.Traces(), plan.Options{PlanOptions: opt, Chains: &chains}, func(l *plan.Layout) error {
		if *format == "json" {
			return enc.Encode(l)
		}
		rows = append(rows, *l)
		return nil
	})
	if err != nil {
		return fmt.Errorf("dataset plan: %w", err)
	}
	if *format == "json" {
		return nil
	}
	return plan.WriteTable(io.out, g.Name, rows, tot)
}
