package inferencex

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/agentperf/agentperf/internal/inputerr"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/server/servermetrics"
)

// What `agentperf report` does with folders it only reads: the InferenceX
// result JSON of one folder (WriteInferenceXDir), the sweep table and the
// Pareto plot of several (WriteSweep), their checks (CheckFolders), and
// the row of a folder just recomputed (WriteFolderRow).
// The command maps its flags to these options and prints; the messages
// name the command's flags, since they are what a user corrects.

// InputError is a problem with what the user gave (a flag value, an
// environment variable, a folder that is not a run's, a file that cannot
// be read or parsed): `agentperf report` exits 2 on it. Its message is
// Err's.
// It is the type of every package's InputError (inputerr.Error).
type InputError = inputerr.Error

func inputErrorf(format string, a ...any) error {
	return &InputError{Err: fmt.Errorf(format, a...)}
}

// Warn receives a warning line (without the "agentperf: warning: "
// prefix); nil drops it.
type Warn func(format string, a ...any)

func (w Warn) say(format string, a ...any) {
	if w != nil {
		w(format, a...)
	}
}

// lookupOr returns look, or the process environment when it is nil.
func lookupOr(look Lookup) Lookup {
	if look != nil {
		return look
	}
	return os.LookupEnv
}

// PublishOptions are the inputs of one folder's InferenceX result JSON
// beyond the folder.
type PublishOptions struct {
	Schema Schema
	// Assign are NAME=VALUE settings of InferenceX variables (--env),
	// over the environment.
	Assign []string
	// Vars are InferenceX variables by name (TP, CONC, …) from named
	// flags, over Assign; an empty value is not set.
	Vars map[string]string
	// ServerLogs are the paths of inference server logs to read the KV
	// pool size from.
	ServerLogs []string
	// Lookup reads the environment; nil is the process environment.
	Lookup Lookup
	Warn   Warn
}

// WriteInferenceXDir writes the InferenceX result JSON of the run in dir
// to out, each warning of the result to opt.Warn.
func WriteInferenceXDir(dir string, opt PublishOptions, out io.Writer) error {
	vals := map[string]string{}
	for _, kv := range opt.Assign {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return inputErrorf("report: --env %q: want NAME=VALUE", kv)
		}
		vals[k] = v
	}
	for k, v := range opt.Vars {
		if v != "" {
			vals[k] = v
		}
	}
	look := lookupOr(opt.Lookup)
	env, err := LoadEnv(func(n string) (string, bool) {
		if v, ok := vals[n]; ok {
			return v, true
		}
		return look(n)
	})
	if err != nil {
		return inputErrorf("report: %w", err)
	}
	var parsed []*ServerLog
	for _, p := range opt.ServerLogs {
		f, err := os.Open(p)
		if err != nil {
			return inputErrorf("report: --server-log: %w", err)
		}
		lg, err := ParseServerLog(f)
		f.Close()
		if err != nil {
			return inputErrorf("report: --server-log %s: %w", p, err)
		}
		parsed = append(parsed, lg)
	}
	run, err := Load(dir)
	if err != nil {
		return loadError(dir, err)
	}
	res, err := run.InferenceX(Options{Schema: opt.Schema, Env: env, ServerLogs: parsed})
	if err != nil {
		return inputErrorf("report: %w", err)
	}
	for _, w := range res.Warnings {
		opt.Warn.say("%s", w)
	}
	if err := res.WriteJSON(out); err != nil {
		return fmt.Errorf("report: write result: %w", err)
	}
	return nil
}

// loadError classes a Load error: bad or missing input is an InputError.
func loadError(dir string, err error) error {
	switch {
	case errors.Is(err, ErrNotArtifactDir), errors.Is(err, ErrBadRecords),
		errors.Is(err, ErrBadArtifact), errors.Is(err, metrics.ErrBadExport), errors.Is(err, fs.ErrNotExist):
		return inputErrorf("report %s: %w", dir, err)
	}
	return fmt.Errorf("report %s: %w", dir, err)
}

// Table formats of WriteSweep.
const (
	FormatMarkdown = "markdown"
	FormatCSV      = "csv"
	FormatJSON     = "json"
)

// SweepOptions say what WriteSweep writes and how the folders are
// labelled.
type SweepOptions struct {
	// TP, Conc and Config label the folders: empty, one value for all, or
	// a comma list with one per folder. An unset TP comes from the folder
	// name, else $TP; an unset concurrency from the folder name, else the
	// run.
	TP, Conc, Config string
	// Format is the table's format (FormatMarkdown, FormatCSV,
	// FormatJSON); "" writes no table.
	Format string
	// Plot is the path of the Pareto plot's PNG; "" draws none.
	Plot    string
	ParetoY ParetoY
	// Lookup reads the environment; nil is the process environment.
	Lookup Lookup
	Warn   Warn
}

// WriteSweep writes the sweep table of dirs to out (opt.Format) and the
// Pareto plot (opt.Plot). An unreadable folder is a failed row carrying
// the reason, not an error.
func WriteSweep(dirs []string, opt SweepOptions, out io.Writer) error {
	tps, err := perDir("tp", opt.TP, len(dirs))
	if err != nil {
		return err
	}
	concs, err := perDir("conc", opt.Conc, len(dirs))
	if err != nil {
		return err
	}
	cfgs, err := perDirString(opt.Config, len(dirs))
	if err != nil {
		return err
	}
	look := lookupOr(opt.Lookup)
	rows := make([]Row, len(dirs))
	for i, d := range dirs {
		rows[i] = folderRow(d, tps[i], concs[i], cfgs[i], look)
	}
	t := NewTable(rows)
	if opt.Format != "" {
		switch opt.Format {
		case FormatCSV:
			err = t.WriteCSV(out)
		case FormatJSON:
			err = t.WriteJSON(out)
		default:
			err = t.WriteMarkdown(out)
		}
		if err != nil {
			return fmt.Errorf("report: write table: %w", err)
		}
	}
	if opt.Plot != "" {
		skipped, err := WritePareto(t, opt.Plot, ParetoOptions{Y: opt.ParetoY})
		for _, s := range skipped {
			opt.Warn.say("%s", s)
		}
		if errors.Is(err, ErrNothingToPlot) {
			return &InputError{Err: fmt.Errorf("report: --plot: %w", err)}
		}
		if err != nil {
			return fmt.Errorf("report: --plot %s: %w", opt.Plot, err)
		}
	}
	return nil
}

// folderRow loads one folder into its table row; an unreadable folder is
// a failed row carrying the reason.
func folderRow(dir string, tp, conc int, cfg string, look Lookup) Row {
	ptp, pconc := LabelsFromPath(dir)
	if tp == 0 {
		tp = ptp
	}
	if tp == 0 {
		tp = EnvTP(look)
	}
	if conc == 0 {
		conc = pconc
	}
	l := Labels{TP: tp, Conc: conc, Config: cfg}
	runs, sum, err := loadRuns(dir)
	if err != nil {
		return FailedRow(dir, l, err)
	}
	return runsRow(dir, runs, sum, l)
}

// loadRuns loads the run in dir, or each run of the repeated run in dir
// (metrics.IsRepeated: a profile with --num-profile-runs) with its pooled
// summary (nil for one run; zero when the runs stopped before writing
// it).
func loadRuns(dir string) ([]*Run, *metrics.PooledSummary, error) {
	if !metrics.IsRepeated(dir) {
		r, err := Load(dir)
		return []*Run{r}, nil, err
	}
	sum, err := metrics.ReadPooledSummary(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	folders, err := metrics.RunFolders(dir)
	if err != nil {
		return nil, nil, err
	}
	runs := make([]*Run, len(folders))
	for i, f := range folders {
		if runs[i], err = Load(f); err != nil {
			return nil, nil, fmt.Errorf("run %d of %d: %w", i+1, len(folders), err)
		}
	}
	return runs, &sum, nil
}

// runsRow is the table row of what loadRuns loaded from dir: the run's,
// or the pooled row of a repeated run's runs (PooledRow); an unset
// concurrency is the (first) run's.
func runsRow(dir string, runs []*Run, sum *metrics.PooledSummary, l Labels) Row {
	if l.Conc == 0 && len(runs) > 0 {
		l.Conc, _ = runs[0].Concurrency()
	}
	if sum == nil {
		return NewRow(runs[0], l)
	}
	row := PooledRow(runs, l, *sum)
	row.Dir = dir
	return row
}

// WriteFolderRow writes to w the server figures of the run in dir
// (through derived, when the run has server metrics) and its row of the
// sweep table, labelled from the folder name, else the run's
// concurrency: what `agentperf report DIR` prints after recomputing a
// folder. For a repeated run it writes the pooled row of its runs.
func WriteFolderRow(dir string, w io.Writer, derived func(io.Writer, *servermetrics.Derived)) error {
	runs, sum, err := loadRuns(dir)
	if err != nil {
		return err
	}
	if sum == nil && runs[0].Server != nil {
		derived(w, &runs[0].Derived)
	}
	tp, conc := LabelsFromPath(dir)
	row := runsRow(dir, runs, sum, Labels{TP: tp, Conc: conc})
	fmt.Fprintln(w, "\nSweep table row (agentperf report DIR... for several runs):")
	return NewTable([]Row{row}).WriteMarkdownBrief(w)
}

// perDir splits a flag value given once or once per folder into positive
// integers (0 when unset).
func perDir(name, v string, n int) ([]int, error) {
	out := make([]int, n)
	if v == "" {
		return out, nil
	}
	parts := strings.Split(v, ",")
	if len(parts) != 1 && len(parts) != n {
		return nil, inputErrorf("report: --%s %q has %d values for %d folders: give one value, or one per folder", name, v, len(parts), n)
	}
	for i := range out {
		p := parts[0]
		if len(parts) == n {
			p = parts[i]
		}
		x, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || x <= 0 {
			return nil, inputErrorf("report: --%s %q: %q is not a positive integer", name, v, p)
		}
		out[i] = x
	}
	return out, nil
}

// perDirString splits the --config value given once or once per folder.
func perDirString(v string, n int) ([]string, error) {
	out := make([]string, n)
	if v == "" {
		return out, nil
	}
	parts := strings.Split(v, ",")
	if len(parts) != 1 && len(parts) != n {
		return nil, inputErrorf("report: --config %q has %d values for %d folders: give one value, or one per folder", v, len(parts), n)
	}
	for i := range out {
		if len(parts) == n {
			out[i] = strings.TrimSpace(parts[i])
		} else {
			out[i] = strings.TrimSpace(parts[0])
		}
	}
	return out, nil
}

// FolderChecks are the settings of CheckFolders.
type FolderChecks struct {
	// Threshold is the largest share of failed requests accepted; nil
	// takes $AIPERF_FAILED_REQUEST_THRESHOLD, else
	// DefaultFailedRequestThreshold.
	Threshold *float64
	// Prefix, when not nil, is the prefix of the server metrics required;
	// nil takes $AIPERF_REQUIRED_SERVER_METRIC_PREFIX.
	Prefix *string
	// Lookup reads the environment; nil is the process environment.
	Lookup Lookup
}

// errNoRuns is the error of a repeated run whose pooled summary lists no
// run.
var errNoRuns = errors.New("a repeated run whose pooled summary lists no finished run")

// CheckFolders runs the checks of every folder (of each run of a
// repeated run), printing each check and
// each folder's verdict to w, and reports whether any failed. A folder
// that cannot be read fails; a threshold that is not a share in [0, 1]
// is an InputError.
func CheckFolders(dirs []string, opt FolderChecks, w io.Writer) (failed bool, err error) {
	look := lookupOr(opt.Lookup)
	var th float64
	if opt.Threshold != nil {
		th = *opt.Threshold
	} else {
		th = DefaultFailedRequestThreshold
		if v, ok := look("AIPERF_FAILED_REQUEST_THRESHOLD"); ok && v != "" {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return false, inputErrorf("report: AIPERF_FAILED_REQUEST_THRESHOLD=%q is not a number", v)
			}
			th = x
		}
	}
	if !(th >= 0 && th <= 1) {
		return false, inputErrorf("report: the failed-request threshold %v must be in [0, 1]", th)
	}
	var pre string
	if opt.Prefix != nil {
		pre = *opt.Prefix
	} else {
		pre, _ = look("AIPERF_REQUIRED_SERVER_METRIC_PREFIX")
	}
	for _, d := range dirs {
		// A repeated run's checks are its runs'.
		runs, err := metrics.RunFolders(d)
		if err == nil && len(runs) == 0 {
			err = errNoRuns
		}
		if err != nil {
			fmt.Fprintf(w, "FAIL %s: cannot be read: %v\n", d, err)
			failed = true
		}
		for _, rd := range runs {
			if !CheckFolder(rd, CheckOptions{FailedRequestThreshold: th, RequiredServerMetricPrefix: pre}, w) {
				failed = true
			}
		}
	}
	return failed, nil
}

// CheckFolder prints the checks of one folder to w and reports whether
// they all passed; a folder that cannot be read fails.
func CheckFolder(dir string, opt CheckOptions, w io.Writer) bool {
	run, err := Load(dir)
	if err != nil {
		fmt.Fprintf(w, "FAIL %s: cannot be read: %v\n", dir, err)
		return false
	}
	results := run.Check(opt)
	passed := 0
	for _, c := range results {
		mark := "FAIL"
		if c.OK {
			mark = "ok  "
			passed++
		}
		fmt.Fprintf(w, "%s %-24s %s\n", mark, c.Name, c.Message)
	}
	verdict := "passed"
	if passed < len(results) {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "check %s: %s (%d of %d checks passed)\n", run.Dir, verdict, passed, len(results))
	return passed == len(results)
}
