package inferencex

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/agentperf/agentperf/internal/suggest"
)

// What `agentperf report` decides over the folders it is given: whether
// it recomputes one folder or only reads them (ReportOptions.ReadOnly),
// the values of its flags that name a format, a schema or an axis, and
// the read-only report itself (Report). The command maps its flags to
// ReportOptions and prints.

// FormatInferenceX is the format of the InferenceX result JSON; the
// others (FormatMarkdown, FormatCSV, FormatJSON) are the sweep table's.
const FormatInferenceX = "inferencex"

// Formats are the values of `agentperf report --format`.
var Formats = []string{FormatInferenceX, FormatMarkdown, FormatCSV, FormatJSON}

// CheckFormat accepts "" and the Formats.
func CheckFormat(s string) error {
	if s == "" || slices.Contains(Formats, s) {
		return nil
	}
	return fmt.Errorf("report: --format %q%s: use inferencex, markdown, csv or json", s, suggest.DidYouMean(s, Formats))
}

// ParseParetoY accepts "total" and "output".
func ParseParetoY(s string) (ParetoY, error) {
	if y := ParetoY(s); y == ParetoTotal || y == ParetoOutput {
		return y, nil
	}
	return "", fmt.Errorf("report: --pareto-y %q: use total or output", s)
}

// Variable is one of InferenceX's variables that `agentperf report` also
// takes as a named flag (--tp for TP).
type Variable struct{ Flag, Env, Help string }

// Variables are the variables with a named flag, in the help's order.
var Variables = []Variable{
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

// Differences names the result fields where agentperf writes the right
// value and InferenceX's Python processor does not (the end of `agentperf
// report --help`; docs/report-inferencex.md).
const Differences = `
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

// ReportOptions are what `agentperf report` is asked to do with its
// folders.
type ReportOptions struct {
	Dirs []string
	// Format is FormatInferenceX (the result JSON of Dirs[0], with
	// Publish), a table format (the sweep table, with Sweep), or "": the
	// markdown table with several folders and no Check, else no output.
	Format string
	// Output is the file the result JSON or the table goes to; nil (not
	// given) and "-" are stdout, and the checks then go to stderr.
	Output *string
	// Publish describes the run of the result JSON; its Warn is Warn.
	Publish PublishOptions
	// Sweep labels the table's folders and says where the Pareto plot
	// goes; its Format is Format, its Warn is Warn.
	Sweep SweepOptions
	// Check runs the checks of every folder (CheckFolders) with Checks.
	Check  bool
	Checks FolderChecks
	Warn   Warn
}

// ReportFlags are the values of `agentperf report`'s flags that are not
// options as such: the schema and the Pareto axis as given, and the
// recompute mode's flags (run.RecomputeOptions).
type ReportFlags struct {
	Schema, ParetoY       string
	NoPlot, NoHTML, Force bool
}

// Complete sets o.Publish.Schema and o.Sweep.ParetoY from fl and refuses
// what cannot be done: a format, schema or axis that is not one, a flag
// that does not apply to what is asked (given says whether a flag was
// given). The first refusal in this order is the error; the messages
// name the flags, since they are what a user corrects.
func (o *ReportOptions) Complete(fl ReportFlags, given func(flag string) bool) error {
	var schemaErr, paretoErr error
	o.Publish.Schema, schemaErr = ParseSchema(fl.Schema)
	o.Sweep.ParetoY, paretoErr = ParseParetoY(fl.ParetoY)
	ix, readOnly := o.Format == FormatInferenceX, o.ReadOnly()
	named := "" // the first variable's flag given that the sweep table does not take
	for _, v := range Variables {
		if named == "" && given(v.Flag) && v.Flag != "tp" && v.Flag != "conc" {
			named = v.Flag
		}
	}
	only := func(bad bool, format string, a ...any) error {
		if bad {
			return fmt.Errorf("report: "+format, a...)
		}
		return nil
	}
	for _, err := range []error{
		CheckFormat(o.Format),
		only(given("schema") && !ix, "--schema applies to --format inferencex only"),
		schemaErr, paretoErr,
		only(given("pareto-y") && o.Sweep.Plot == "", "--pareto-y applies to --plot only"),
		only((given("failed-request-threshold") || given("required-server-metric-prefix")) && !o.Check,
			"--failed-request-threshold and --required-server-metric-prefix apply to --check only"),
		only(ix && len(o.Dirs) != 1, "--format inferencex writes the result of one run; got %d folders", len(o.Dirs)),
		only(!ix && (len(o.Publish.ServerLogs) > 0 || len(o.Publish.Assign) > 0), "--server-log and --env apply to --format inferencex only"),
		only(!ix && named != "", "--%s applies to --format inferencex only (the sweep table takes --tp, --conc and --config-name)", named),
		only(ix && (given("config-name") || given("config")), "--config-name applies to the sweep table and plot, not to --format inferencex"),
		only((fl.NoPlot || fl.NoHTML) && readOnly, "--no-plot and --no-html apply to recomputing one folder (without --format, --plot or --check)"),
		only(fl.Force && readOnly, "--force applies to recomputing one folder (without --format, --plot or --check)"),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// ReadOnly reports whether the folders are only read: with a format, a
// plot, the checks or several folders. Otherwise the one folder is
// recomputed (`agentperf report DIR`, run.Recompute).
func (o *ReportOptions) ReadOnly() bool {
	return o.Format != "" || o.Sweep.Plot != "" || o.Check || len(o.Dirs) > 1
}

// Report does what o asks of folders it only reads: the result JSON or
// the sweep table to o.Output (else stdout), the Pareto plot, then the
// checks to stdout (stderr when the output went there). It reports
// whether a check failed. What the user gave wrong (a folder that does
// not exist, an output with nothing to write, a file that cannot be
// created, and what WriteInferenceXDir, WriteSweep and CheckFolders
// refuse) is an *InputError.
func Report(o ReportOptions, stdout, stderr io.Writer) (failed bool, err error) {
	for _, d := range o.Dirs {
		if _, err := os.Stat(d); err != nil {
			return false, inputErrorf("report: %w", err)
		}
	}
	if o.Format == "" && len(o.Dirs) > 1 && !o.Check {
		o.Format = FormatMarkdown
	}
	if o.Output != nil && o.Format == "" {
		return false, inputErrorf("report: -o writes the result JSON or the table; nothing is written with --plot or --check alone")
	}
	out, checkOut := stdout, stdout
	var file *os.File
	if o.Format != "" && o.Output != nil && *o.Output != "-" {
		if file, err = os.Create(*o.Output); err != nil {
			return false, inputErrorf("report: -o: %w", err)
		}
		out = file
	} else if o.Format != "" {
		checkOut = stderr
	}
	failed, err = o.write(out, checkOut)
	if file != nil {
		if cerr := file.Close(); cerr != nil && err == nil {
			return failed, fmt.Errorf("report: -o %s: %w", *o.Output, cerr)
		}
	}
	return failed, err
}

// write writes the result JSON or the table and the plot to out, then
// the checks to checkOut.
func (o *ReportOptions) write(out, checkOut io.Writer) (bool, error) {
	var err error
	switch {
	case o.Format == FormatInferenceX:
		o.Publish.Warn = o.Warn
		err = WriteInferenceXDir(o.Dirs[0], o.Publish, out)
	case o.Format != "" || o.Sweep.Plot != "":
		o.Sweep.Format, o.Sweep.Warn = o.Format, o.Warn
		err = WriteSweep(o.Dirs, o.Sweep, out)
	}
	if err != nil || !o.Check {
		return false, err
	}
	return CheckFolders(o.Dirs, o.Checks, checkOut)
}
