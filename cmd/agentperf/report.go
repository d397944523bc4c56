package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/plot"
)

func init() {
	register(command{name: "report", summary: "recompute the aggregates, the plot and report.html of an artifact folder", run: runReport})
}

const reportExamples = `  # Recompute profile_export_aiperf.json/.csv, metrics_plots.png and report.html
  # from profile_export.jsonl (and server_metrics_export.json) and print the summary
  agentperf report results/aiperf_artifacts

  # The same without re-rendering the plot
  agentperf report --no-plot results/aiperf_artifacts`

// runReport implements `agentperf report DIR`: it rereads the folder's
// profile_export.jsonl (and context_overflow_export.jsonl), rewrites the
// aggregate JSON and CSV keeping the run context of the existing JSON, and
// prints the summary table; then it re-renders metrics_plots.png (unless
// --no-plot), recording any plot problem as a warning in the JSON and on
// stderr. Exit codes: 2 when the folder or its record
// export is missing or malformed, 1 when the request accounting does not
// add up (the files are still rewritten).
func runReport(_ context.Context, args []string, io stdio) error {
	fs := newFlagSet("report", "report [--no-plot] [--no-html] DIR", reportExamples, io.err)
	noPlot := fs.Bool("no-plot", false, "do not re-render metrics_plots.png")
	noHTML := fs.Bool("no-html", false, "do not rewrite report.html (the interactive report)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return usagef("report: exactly one artifact folder is required, got %d arguments", fs.NArg())
	}
	dir := fs.Arg(0)
	_, err := metrics.Report(dir, io.out)
	var failed error
	switch {
	case err == nil:
	case errors.Is(err, metrics.ErrAccounting):
		fmt.Fprintf(io.err, "agentperf: report %s: %v\n", dir, err)
		failed = errRunFailed
	case errors.Is(err, metrics.ErrBadExport), isNotExist(err):
		return asUsage(err)
	default:
		return fmt.Errorf("report %s: %w", dir, err)
	}
	if !*noPlot {
		warnings, err := plot.RenderDir(dir)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("metrics_plots.png was not rendered: %v", err))
		}
		for _, w := range warnings {
			fmt.Fprintf(io.err, "agentperf: warning: %s\n", w)
		}
		if err := metrics.AddWarnings(dir, warnings...); err != nil {
			return fmt.Errorf("report %s: record plot warnings: %w", dir, err)
		}
	}
	if !*noHTML {
		warnings, err := writeHTMLReport(dir)
		for _, w := range warnings {
			fmt.Fprintf(io.err, "agentperf: warning: %s\n", w)
		}
		if err != nil {
			return fmt.Errorf("report %s: %w", dir, err)
		}
		if err := metrics.AddWarnings(dir, warnings...); err != nil {
			return fmt.Errorf("report %s: record report.html warnings: %w", dir, err)
		}
	}
	return failed
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
