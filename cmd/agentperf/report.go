package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/agentperf/agentperf/metrics"
)

func init() {
	register(command{name: "report", summary: "recompute the aggregates (and summary) of an artifact folder", run: runReport})
}

const reportExamples = `  # Recompute profile_export_aiperf.json/.csv from profile_export.jsonl and print the summary
  agentperf report results/aiperf_artifacts`

// runReport implements `agentperf report DIR`: it rereads the folder's
// profile_export.jsonl (and context_overflow_export.jsonl), rewrites the
// aggregate JSON and CSV keeping the run context of the existing JSON, and
// prints the summary table. Exit codes: 2 when the folder or its record
// export is missing or malformed, 1 when the request accounting does not
// add up (the files are still rewritten).
func runReport(_ context.Context, args []string, io stdio) error {
	fs := newFlagSet("report", "report DIR", reportExamples, io.err)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return usagef("report: exactly one artifact folder is required, got %d arguments", fs.NArg())
	}
	dir := fs.Arg(0)
	_, err := metrics.Report(dir, io.out)
	switch {
	case err == nil:
	case errors.Is(err, metrics.ErrAccounting):
		fmt.Fprintf(io.err, "agentperf: report %s: %v\n", dir, err)
		return errRunFailed
	case errors.Is(err, metrics.ErrBadExport), isNotExist(err):
		return asUsage(err)
	default:
		return fmt.Errorf("report %s: %w", dir, err)
	}
	// PLOT CALL SITE: once metrics/plot provides RenderDir, re-render
	// metrics_plots.png here, e.g.
	//	if warnings, err := plot.RenderDir(dir); err != nil { ... print a warning ... }
	return nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
