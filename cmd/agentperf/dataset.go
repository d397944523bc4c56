package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// datasetCommands are the subcommands of `agentperf dataset`, registered by
// the dataset_*.go files.
var datasetCommands = map[string]command{}

func registerDataset(c command) { datasetCommands[c.name] = c }

func init() {
	register(command{name: "dataset", summary: "inspect, cache, generate and render trace corpora", run: runDataset})
}

const datasetExamples = `
Run 'agentperf dataset <command> --help' for its flags and examples.

Examples:
  agentperf dataset info --public-dataset synthetic
  agentperf dataset synth --seed 1 --traces 40 -o synth.jsonl
  agentperf dataset info --input-file synth.jsonl --json
`

func runDataset(ctx context.Context, args []string, io stdio) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(io.out, "Usage:\n  agentperf dataset <command> [flags]\n\nCommands:")
		for _, n := range slices.Sorted(maps.Keys(datasetCommands)) {
			fmt.Fprintf(io.out, "  %-8s %s\n", n, datasetCommands[n].summary)
		}
		fmt.Fprint(io.out, datasetExamples)
		if len(args) == 0 {
			return usagef("dataset: a command is required")
		}
		return nil
	}
	c, ok := datasetCommands[args[0]]
	if !ok {
		return usagef("dataset: unknown command %q (run 'agentperf dataset --help')", args[0])
	}
	return c.run(ctx, args[1:], io)
}
