package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentperf/agentperf/internal/suggest"

	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/analysis/inferencex"
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

// reportDifferences names the result fields where agentperf writes the
// right value and InferenceX's Python processor does not.
const reportDifferences = `
Where --format inferencex differs from InferenceX's processor (docs/report-inferencex.md):
  v2 num_requests_total         profiling records incl. failed ones (the processor wrote the successful count)
  v2 *_intvty                   1 / the matching ITL statistic, so p90 is the slow tail (the processor took stats of 1/ITL)
  v2 theoretical_cache_hit_rate over the measured records, from the artifacts (the processor looked the corpus up by a
                                hard-coded dataset name and wrote null when it was stale)
  v2 server_cpu_cache_hit_rate  vllm:external_prefix_cache_* (the processor read vllm:cpu_prefix_cache_*, never exported)
  v2 cpu_kv_cache_usage_pct, v3 kv_cache.gpu_usage_pct and cpu_usage_pct
                                each engine's peak averaged over engines (the v2 processor summed engines; v3 took the largest)
  v2/v3 *_output_tokens_expected from the records' recorded_output_tokens (the processor globbed the HF cache)
  v2/v3 kv_offload_*            also read from vllm:kv_offload_total_bytes/_time{transfer_type} (vLLM's native names)
  v2 kv_cache_pool_tokens, warnings   added; v3 warnings also name every defaulted setting; both name every empty
                                field, and model is the run's served model when MODEL is unset
  v2/v3 validity                added: the run's scenario, submission_valid and submission_invalid_reasons (--check
                                fails each reason under its own name, e.g. unsafe_override)
`

// envFlags are the named flags that stand for InferenceX's variables.
var envFlags = []struct{ flag, env, help string }{
	{"hw", "RUNNER_TYPE", "hardware name (hw)"},
	{"conc", "CONC", "concurrency (conc); with several folders a comma list, one per folder"},
	{"tp", "TP", "tensor-parallel size (tp); with several folders a comma list, one per folder"},
	{"ep", "EP_SIZE", "expert-parallel size (ep)"},
	{"framework", "FRAMEWORK", "serving framework (framework), e.g. vllm, sglang, dynamo-vllm"},
	{"precision", "PRECISION", "precision (precision), e.g. fp8"},
	{"model", "MODEL", "model id (model)"},
	{"model-prefix", "MODEL_PREFIX", "InferenceX model prefix (infmax_model_prefix)"},
	{"image", "IMAGE", "container image (image)"},
	{"kv-offloading", "KV_OFFLOADING", "KV offloading (v3 kv_offloading: none|dram|…)"},
}

// runReport implements `agentperf report`. With one folder and none of
// --format, --plot and --check it recomputes the folder (aggregates, plot,
// summary); otherwise it only reads folders: the InferenceX result JSON,
// the sweep table, the Pareto plot and the checks. Exit codes: 2 for a
// usage or input error, 1 when a check fails or the accounting of a
// recomputed folder does not add up.
func runReport(_ context.Context, args []string, sio stdio) error {
	fs := newFlagSet("report", "report [flags] DIR...", reportExamples, sio.out)
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(fs.Output(), reportDifferences)
	}
	f := addReportFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	dirs := fs.Args()
	if len(dirs) == 0 {
		usageTo(fs, sio.err)
		return usagef("report: at least one artifact folder is required")
	}
	sch, py, err := f.validate(fs, dirs)
	if err != nil {
		return err
	}
	asInferenceX := *f.format == "inferencex"
	if !(*f.format != "" || *f.plotPath != "" || *f.check || len(dirs) > 1) {
		return recomputeFolder(dirs[0], *f.noPlot, *f.noHTML, *f.force, sio)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			return asUsage(fmt.Errorf("report: %w", err))
		}
	}

	if *f.format == "" && len(dirs) > 1 && !*f.check {
		*f.format = "markdown"
	}
	wantOutput := *f.format != ""
	if fs.Changed("output") && !wantOutput {
		return usagef("report: -o writes the result JSON or the table; nothing is written with --plot or --check alone")
	}
	var out io.Writer = sio.out
	var outFile *os.File
	if wantOutput && *f.output != "-" {
		of, err := os.Create(*f.output)
		if err != nil {
			return asUsage(fmt.Errorf("report: -o: %w", err))
		}
		outFile, out = of, of
	}
	checkOut := sio.out
	if wantOutput && outFile == nil {
		checkOut = sio.err
	}
	warn := func(format string, a ...any) { fmt.Fprintf(sio.err, "agentperf: warning: "+format+"\n", a...) }

	switch {
	case asInferenceX:
		vars := map[string]string{}
		for _, e := range envFlags {
			vars[e.env] = *f.named[e.flag]
		}
		err = inferencex.WriteInferenceXDir(dirs[0], inferencex.PublishOptions{Schema: sch, Assign: *f.envKV, Vars: vars, ServerLogs: *f.serverLogs, Warn: warn}, out)
	case wantOutput || *f.plotPath != "":
		err = inferencex.WriteSweep(dirs, inferencex.SweepOptions{TP: *f.named["tp"], Conc: *f.named["conc"], Config: *f.config,
			Format: *f.format, Plot: *f.plotPath, ParetoY: py, Warn: warn}, out)
	}
	if err != nil {
		closeOut(outFile)
		return reportError(err)
	}
	failed := false
	if *f.check {
		var chk inferencex.FolderChecks
		if fs.Changed("failed-request-threshold") {
			chk.Threshold = f.threshold
		}
		if fs.Changed("required-server-metric-prefix") {
			chk.Prefix = f.prefix
		}
		if failed, err = inferencex.CheckFolders(dirs, chk, checkOut); err != nil {
			closeOut(outFile)
			return reportError(err)
		}
	}
	if outFile != nil {
		if err := outFile.Close(); err != nil {
			return fmt.Errorf("report: -o %s: %w", *f.output, err)
		}
	}
	if failed {
		return errRunFailed
	}
	return nil
}

// reportFlags are the flags of `agentperf report`.
type reportFlags struct {
	noPlot, noHTML, check, force                              *bool
	format, schema, output, plotPath, paretoY, prefix, config *string
	threshold                                                 *float64
	serverLogs, envKV                                         *[]string
	// named are the flags of envFlags, by flag name.
	named map[string]*string
}

// addReportFlags registers the flags of `agentperf report` on fs.
func addReportFlags(fs *pflag.FlagSet) *reportFlags {
	f := &reportFlags{named: map[string]*string{}}
	f.noPlot = fs.Bool("no-plot", false, "do not re-render metrics_plots.png (one folder, recompute mode)")
	f.noHTML = fs.Bool("no-html", false, "do not rewrite report.html, the interactive report (one folder, recompute mode)")
	f.force = fs.Bool("force", false, "let a recomputation from profile_export.jsonl.partial replace an aggregate whose accounting adds up (one folder, recompute mode; otherwise it goes to profile_export_aiperf_from_partial.json)")
	f.format = fs.String("format", "", "inferencex (result JSON), markdown, csv or json (sweep table; markdown is the default with several folders)")
	f.schema = fs.String("schema", "v3", "result JSON schema with --format inferencex: v3 (nested, InferenceX v1.0+) or v2 (flat, v0.2/v0.3)")
	f.output = fs.StringP("output", "o", "-", "write the result JSON or table to this file (- for stdout)")
	f.plotPath = fs.String("plot", "", "write the Pareto plot (throughput per GPU vs interactivity) of the folders to this PNG")
	f.paretoY = fs.String("pareto-y", "total", "Pareto y axis: total (input + output tok/s per GPU, tput_per_gpu) or output")
	f.check = fs.Bool("check", false, "validate each folder as InferenceX does, plus agentperf's accounting invariants; exit 1 on failure")
	f.threshold = fs.Float64("failed-request-threshold", -1, "largest share of failed requests --check accepts (default $AIPERF_FAILED_REQUEST_THRESHOLD, else 0.10)")
	f.prefix = fs.String("required-server-metric-prefix", "", "with --check, require server metrics with this prefix (default $AIPERF_REQUIRED_SERVER_METRIC_PREFIX)")
	f.serverLogs = fs.StringArray("server-log", nil, "inference server log to read the KV pool size from (repeat for several workers)")
	f.config = fs.String("config-name", "", "configuration name grouping runs in the table and plot; a comma list gives one per folder")
	// --config was this flag's name; sweep's is --config-name, and
	// --config is the YAML file of the other commands.
	fs.StringVar(f.config, "config", "", "")
	_ = fs.MarkDeprecated("config", "use --config-name")
	f.envKV = fs.StringArray("env", nil, "set an InferenceX variable NAME=VALUE for the result JSON (overrides the environment; repeatable)")
	for _, e := range envFlags {
		f.named[e.flag] = fs.String(e.flag, "", e.help+"; default $"+e.env)
	}
	return f
}

// validate checks the flag values and combinations for the folders dirs
// and returns the result schema and the Pareto axis.
func (f *reportFlags) validate(fs *pflag.FlagSet, dirs []string) (inferencex.Schema, inferencex.ParetoY, error) {
	set := fs.Changed
	switch *f.format {
	case "", "inferencex", "markdown", "csv", "json":
	default:
		return "", "", usagef("report: --format %q%s: use inferencex, markdown, csv or json", *f.format, suggest.DidYouMean(*f.format, []string{"inferencex", "markdown", "csv", "json"}))
	}
	if set("schema") && *f.format != "inferencex" {
		return "", "", usagef("report: --schema applies to --format inferencex only")
	}
	sch, err := inferencex.ParseSchema(*f.schema)
	if err != nil {
		return "", "", asUsage(err)
	}
	py := inferencex.ParetoY(*f.paretoY)
	if py != inferencex.ParetoTotal && py != inferencex.ParetoOutput {
		return "", "", usagef("report: --pareto-y %q: use total or output", *f.paretoY)
	}
	if set("pareto-y") && *f.plotPath == "" {
		return "", "", usagef("report: --pareto-y applies to --plot only")
	}
	if (set("failed-request-threshold") || set("required-server-metric-prefix")) && !*f.check {
		return "", "", usagef("report: --failed-request-threshold and --required-server-metric-prefix apply to --check only")
	}
	asInferenceX := *f.format == "inferencex"
	if asInferenceX && len(dirs) != 1 {
		return "", "", usagef("report: --format inferencex writes the result of one run; got %d folders", len(dirs))
	}
	if !asInferenceX {
		if len(*f.serverLogs) > 0 || len(*f.envKV) > 0 {
			return "", "", usagef("report: --server-log and --env apply to --format inferencex only")
		}
		for _, e := range envFlags {
			if set(e.flag) && e.flag != "tp" && e.flag != "conc" {
				return "", "", usagef("report: --%s applies to --format inferencex only (the sweep table takes --tp, --conc and --config-name)", e.flag)
			}
		}
	}
	if (set("config-name") || set("config")) && asInferenceX {
		return "", "", usagef("report: --config-name applies to the sweep table and plot, not to --format inferencex")
	}
	readOnly := *f.format != "" || *f.plotPath != "" || *f.check || len(dirs) > 1
	if (*f.noPlot || *f.noHTML) && readOnly {
		return "", "", usagef("report: --no-plot and --no-html apply to recomputing one folder (without --format, --plot or --check)")
	}
	if *f.force && readOnly {
		return "", "", usagef("report: --force applies to recomputing one folder (without --format, --plot or --check)")
	}
	return sch, py, nil
}

func closeOut(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// recomputeFolder is `agentperf report DIR`: run.Recompute (the
// aggregates, the plot and report.html written again), then the summary
// and the run's seed-table row.
func recomputeFolder(dir string, noPlot, noHTML, force bool, sio stdio) error {
	out, err := run.Recompute(dir, run.RecomputeOptions{NoPlot: noPlot, NoHTML: noHTML, Force: force, Table: sio.out})
	var bad *run.InputError
	if errors.As(err, &bad) {
		return asUsage(bad.Err)
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
	if err := inferencex.WriteFolderRow(dir, sio.out, run.WriteDerived); err != nil {
		fmt.Fprintf(sio.err, "agentperf: warning: sweep table row not computed: %v\n", err)
	}
	return failed
}

// reportError makes an inferencex.InputError a usage error (exit 2).
func reportError(err error) error {
	var bad *inferencex.InputError
	if errors.As(err, &bad) {
		return asUsage(bad.Err)
	}
	return err
}
