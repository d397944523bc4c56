package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentperf/agentperf/run"
)

func init() {
	register(command{name: "merge", summary: "merge the artifact folders of a sharded run's shards into one run's folder, exactly", run: runMerge})
}

const mergeExamples = `  # The shards of one run (agentperf profile --shard I/N or --shard auto)
  agentperf merge results/merged results/shard-0 results/shard-1 results/shard-2
  agentperf merge results/merged results/shard-*`

// runMerge is `agentperf merge OUT DIR…`: run.Merge, then the summary
// and the exit status of the merged run, as profile prints them.
func runMerge(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("merge", "merge OUT SHARD_DIR… [flags]", mergeExamples, io.err)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	pos := fs.Args()
	if len(pos) < 2 {
		return usagef("merge: want the merged folder to write and the shard folders (agentperf merge OUT DIR…)")
	}
	out, err := run.Merge(run.MergeInput{Dir: pos[0], Shards: pos[1:]})
	if errors.Is(err, run.ErrMerge) {
		return asUsage(err)
	} else if err != nil {
		return err
	}
	for _, w := range append(out.Warnings, out.LateWarnings...) {
		fmt.Fprintf(io.err, "warning: %s\n", w)
	}
	if sum := out.Summary; sum != nil {
		t := *sum
		t.Info.Warnings = nil
		t.WriteTable(io.out)
		fmt.Fprintf(io.out, "requests: %s (from %d shards)\n", sum.Info.Accounting.Equation(), len(pos)-1)
	}
	fmt.Fprintf(io.out, "artifacts: %s\n", pos[0])
	for _, pr := range out.Problems {
		printPrefixed(io.err, flagNames(pr.Message))
	}
	if out.Interrupted {
		// The merged run's status, as its profile would have exited: a
		// signal stopped it (scancel, a time limit).
		return fmt.Errorf("%w (the merged run's profiling_end: %s)", errRunInterrupted, out.Result.EndReason)
	}
	// The run's exit-code rule (docs/artifacts.md): under a scenario a
	// smoke run's unsafe_override alone does not fail it.
	if out.ExitCode() == run.ExitFailed {
		return errRunFailed
	}
	return nil
}
