package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/analysis/inferencex"
	"github.com/agentperf/agentperf/internal/inputerr"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/run"
)

func init() {
	register(command{name: "report", summary: "recompute an artifact folder (aggregates, plot, report.html); InferenceX result JSON, sweep table, Pareto plot, checks", run: runReport})
}

const reportExamples = `  # Recompute profile_export_aiperf.json/.csv, metrics_plots.png and report.html
  # from profile_export.jsonl (and server_metrics_export.json) and print the summary
  agentperf report results/aiperf_artifacts

  # The same without re-rendering the plot
  agentperf report --no-plot results/aiperf_artifacts

  # InferenceX's result JSON (nested v3 schema), run description from the
  # job's environment (TP, CONC, RUNNER_TYPE, FRAMEWORK, …) or from flags
  agentperf report --format inferencex --tp 8 --hw h200 --framework vllm \
    --server-log results/server.log -o agg.json results/aiperf_artifacts

  # The flat v0.2/v0.3 schema
  agentperf report --format inferencex --schema v2 results/aiperf_artifacts

  # Sweep table of several runs (markdown; --format csv|json), TP and
  # concurrency read from the folder names (…_tp4-…_conc16_…) or given in order
  agentperf report runs/*/aiperf_artifacts
  agentperf report --tp 4,4,8,8 --conc 16,32,32,48 runA runB runC runD --plot pareto.png

  # Validate a run as InferenceX does (exit 1 on failure)
  agentperf report --check results/aiperf_artifacts`

// runReport implements `agentperf report`. With one folder and none of
// --format, --plot and --check it recomputes the folder (aggregates, plot,
// summary); otherwise it only reads folders (inferencex.Report): the
// InferenceX result JSON, the sweep table, the Pareto plot and the checks.
// Exit codes: 2 for a usage or input error, 1 when a check fails or the
// accounting of a recomputed folder does not add up.
func runReport(_ context.Context, args []string, sio stdio) error {
	fs := newFlagSet("report", "report [flags] DIR...", reportExamples, sio.out)
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(fs.Output(), inferencex.Differences)
	}
	f := addReportFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		usageTo(fs, sio.err)
		return usagef("report: at least one artifact folder is required")
	}
	if err := f.check(fs); err != nil {
		return err
	}
	if !f.opt.ReadOnly() {
		f.recompute.Table = sio.out
		return recomputeFolder(f.opt.Dirs[0], f.recompute, sio)
	}
	f.opt.Warn = func(format string, a ...any) { fmt.Fprintf(sio.err, "agentperf: warning: "+format+"\n", a...) }
	failed, err := inferencex.Report(f.opt, sio.out, sio.err)
	if err != nil {
		return err
	}
	if failed {
		return errRunFailed
	}
	return nil
}

// reportFlags are the flags of `agentperf report`, most of them bound to
// the options they set.
type reportFlags struct {
	opt                             inferencex.ReportOptions
	recompute                       run.RecomputeOptions
	schema, output, paretoY, prefix string
	threshold                       float64
	// named are the flags of inferencex.Variables, by flag name.
	named map[string]*string
}

// addReportFlags registers the flags of `agentperf report` on fs.
func addReportFlags(fs *pflag.FlagSet) *reportFlags {
	f := &reportFlags{named: map[string]*string{}}
	o, r := &f.opt, &f.recompute
	fs.BoolVar(&r.NoPlot, "no-plot", false, "do not re-render metrics_plots.png (one folder, recompute mode)")
	fs.BoolVar(&r.NoHTML, "no-html", false, "do not rewrite report.html, the interactive report (one folder, recompute mode)")
	fs.BoolVar(&r.Force, "force", false, "let a recomputation from profile_export.jsonl.partial replace an aggregate whose accounting adds up (one folder, recompute mode; otherwise it goes to profile_export_aiperf_from_partial.json)")
	fs.StringVar(&o.Format, "format", "", "inferencex (result JSON), markdown, csv or json (sweep table; markdown is the default with several folders)")
	fs.StringVar(&f.schema, "schema", "v3", "result JSON schema with --format inferencex: v3 (nested, InferenceX v1.0+) or v2 (flat, v0.2/v0.3)")
	fs.StringVarP(&f.output, "output", "o", "-", "write the result JSON or table to this file (- for stdout)")
	fs.StringVar(&o.Sweep.Plot, "plot", "", "write the Pareto plot (throughput per GPU vs interactivity) of the folders to this PNG")
	fs.StringVar(&f.paretoY, "pareto-y", "total", "Pareto y axis: total (input + output tok/s per GPU, tput_per_gpu) or output")
	fs.BoolVar(&o.Check, "check", false, "validate each folder as InferenceX does, plus agentperf's accounting invariants; exit 1 on failure")
	fs.Float64Var(&f.threshold, "failed-request-threshold", -1, "largest share of failed requests --check accepts (default $AIPERF_FAILED_REQUEST_THRESHOLD, else 0.10)")
	fs.StringVar(&f.prefix, "required-server-metric-prefix", "", "with --check, require server metrics with this prefix (default $AIPERF_REQUIRED_SERVER_METRIC_PREFIX)")
	fs.StringArrayVar(&o.Publish.ServerLogs, "server-log", nil, "inference server log to read the KV pool size from (repeat for several workers)")
	fs.StringVar(&o.Sweep.Config, "config-name", "", "configuration name grouping runs in the table and plot; a comma list gives one per folder")
	// --config was this flag's name; sweep's is --config-name, and
	// --config is the YAML file of the other commands.
	fs.StringVar(&o.Sweep.Config, "config", "", "")
	_ = fs.MarkDeprecated("config", "use --config-name")
	fs.StringArrayVar(&o.Publish.Assign, "env", nil, "set an InferenceX variable NAME=VALUE for the result JSON (overrides the environment; repeatable)")
	for _, v := range inferencex.Variables {
		f.named[v.Flag] = fs.String(v.Flag, "", v.Help+"; default $"+v.Env)
	}
	return f
}

// check completes the options from the parsed flags
// (inferencex.ReportOptions.Complete refuses what does not apply).
func (f *reportFlags) check(fs *pflag.FlagSet) error {
	o, r := &f.opt, &f.recompute
	o.Dirs, o.Publish.Vars = fs.Args(), map[string]string{}
	o.Sweep.TP, o.Sweep.Conc = *f.named["tp"], *f.named["conc"]
	for _, v := range inferencex.Variables {
		o.Publish.Vars[v.Env] = *f.named[v.Flag]
	}
	if fs.Changed("output") {
		o.Output = &f.output
	}
	if fs.Changed("failed-request-threshold") {
		o.Checks.Threshold = &f.threshold
	}
	if fs.Changed("required-server-metric-prefix") {
		o.Checks.Prefix = &f.prefix
	}
	fl := inferencex.ReportFlags{Schema: f.schema, ParetoY: f.paretoY, NoPlot: r.NoPlot, NoHTML: r.NoHTML, Force: r.Force}
	return asUsage(o.Complete(fl, fs.Changed))
}

// recomputeFolder is `agentperf report DIR`: run.Recompute of the folder,
// or of each run of a repeated run (profile --num-profile-runs), each
// followed by its summary and sweep-table row; then a repeated run's
// pooled summary, pooled again from its runs (metrics.RepoolSummary), and
// its pooled row. A run whose accounting does not add up does not stop
// the others.
func recomputeFolder(dir string, opt run.RecomputeOptions, sio stdio) error {
	runs, repeated := []string{dir}, metrics.IsRepeated(dir)
	if repeated {
		var err error
		if runs, err = metrics.RunFolders(dir); err != nil {
			return asUsage(fmt.Errorf("report %s: %w", dir, err))
		}
	}
	row := func(d string) {
		if err := inferencex.WriteFolderRow(d, sio.out, run.WriteDerived); err != nil {
			fmt.Fprintf(sio.err, "agentperf: warning: sweep table row not computed: %v\n", err)
		}
	}
	var failed error
	for i, rd := range runs {
		if repeated {
			fmt.Fprintf(sio.out, "== profile run %d of %d: %s\n", i+1, len(runs), rd)
		}
		if err := recomputeRun(rd, opt, sio); errors.Is(err, errRunFailed) {
			failed = err
		} else if err != nil {
			return err
		}
		row(rd)
	}
	if !repeated {
		return failed
	}
	if sum, err := metrics.RepoolSummary(dir); err == nil {
		(&run.RepeatOutcome{Dir: dir, Summary: sum}).WriteSummary(sio.out)
	} else if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(sio.err, "agentperf: warning: %s has no pooled summary: its runs stopped before it was written\n", dir)
	} else {
		return fmt.Errorf("report %s: pooled summary: %w", dir, err)
	}
	row(dir)
	return failed
}

// recomputeRun is run.Recompute of one run's folder, its problems and
// late warnings printed.
func recomputeRun(dir string, opt run.RecomputeOptions, sio stdio) error {
	out, err := run.Recompute(dir, opt)
	if inputerr.Is(err) {
		return err
	}
	var failed error
	for _, p := range out.Problems {
		for _, line := range strings.Split(p.Message, "\n") {
			fmt.Fprintf(sio.err, "agentperf: report %s: %s\n", dir, line)
		}
		failed = errRunFailed
	}
	for _, w := range out.LateWarnings {
		fmt.Fprintf(sio.err, "agentperf: warning: %s\n", w)
	}
	if err != nil {
		return err
	}
	return failed
}
