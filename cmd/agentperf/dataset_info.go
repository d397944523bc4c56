package main

import (
	"context"
	"fmt"

	"github.com/agentperf/agentperf/dataset"
)

func init() {
	registerDataset(command{name: "info", summary: "print corpus statistics (counts, ISL/OSL/think time, context lengths, theoretical hit rate)", run: runDatasetInfo})
}

const datasetInfoExamples = `  # the built-in synthetic corpus
  agentperf dataset info --public-dataset synthetic

  # a local corpus file (JSONL, optionally .zst/.gz) or a directory of one-trace JSON files
  agentperf dataset info --input-file traces.jsonl.zst
  agentperf dataset info --input-file ./traces/

  # the InferenceX default corpus from the local HF hub cache, as a 128k server would see it
  agentperf dataset info --public-dataset semianalysis_cc_traces_weka_062126 --max-context-length 131072

  # machine-readable
  agentperf dataset info --input-file traces.jsonl --json | jq .stats.theoretical_prefix_cache_hit_rate

The corpus is opened like 'agentperf profile' opens it (same flags, same dataset cache).`

func runDatasetInfo(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("dataset info", "dataset info (--input-file PATH | --public-dataset ALIAS | --hf-dataset ORG/NAME[@REV]) [flags]", datasetInfoExamples, io.out)
	df := addDatasetFlags(fs)
	asJSON := fs.Bool("json", false, "print the statistics as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("dataset info: unexpected argument %q (pass the corpus with --input-file)", fs.Arg(0))
	}
	corpus, err := df.open(ctx, io)
	if err != nil {
		return err
	}
	defer corpus.Close()
	info := dataset.NewInfo(corpus)
	if *asJSON {
		if err := info.WriteJSON(io.out); err != nil {
			return fmt.Errorf("dataset info: %w", err)
		}
		return nil
	}
	return info.WriteText(io.out)
}
