package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentperf/agentperf/analysis/compare"
)

func init() {
	register(command{name: "compare", summary: "compare run folders to a baseline: ratios with bootstrap 95% intervals and a verdict per metric", run: runCompare})
}

const compareExamples = `  # Is B faster than A? Each metric's ratio B/A with a 95% bootstrap interval
  agentperf compare runs/baseline runs/new-kernel
  # Several treatments against one baseline; compare.html, compare.png and compare.json into OUT
  agentperf compare --output-dir cmp runs/a runs/b runs/c
  # Two sweeps (agentperf sweep folders): each shared concurrency compared, the curves overlaid
  agentperf compare --output-dir cmp sweeps/vllm-0.11 sweeps/vllm-0.12`

// runCompare is `agentperf compare A B [C…]`: compare.Dirs (run or sweep
// folders), the table, and the files.
func runCompare(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("compare", "compare A B [C…] [flags]", compareExamples, io.err)
	out := fs.String("output-dir", ".", "folder for compare.html, compare.png and compare.json")
	allow := fs.Bool("allow-different", false, "compare folders whose corpora or scenarios differ")
	resamples := fs.Int("bootstrap-resamples", 2000, "bootstrap resamples per metric")
	seed := fs.Uint64("seed", 1, "seed of the bootstrap (same folders and seed: same intervals)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	pos := fs.Args()
	if len(pos) < 2 {
		return usagef("compare: want the baseline folder and at least one more (agentperf compare A B [C…])")
	}
	if *resamples < 100 {
		return usagef("--bootstrap-resamples %d: want at least 100", *resamples)
	}
	if err := compare.CheckKinds(pos); err != nil {
		return asUsage(err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	res, err := compare.Dirs(pos, compare.Options{Resamples: *resamples, Seed: *seed, AllowDifferent: *allow})
	if err != nil {
		return err
	}
	res.WriteTable(io.out)
	if err := res.Write(*out); err != nil {
		return fmt.Errorf("compare: write %s: %w", *out, err)
	}
	fmt.Fprint(io.out, res.Written(*out))
	return nil
}
