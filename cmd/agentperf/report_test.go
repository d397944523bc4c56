package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/metrics"
)

// writeArtifacts runs three records through a Collector into dir.
func writeArtifacts(t *testing.T, dir string, acct metrics.Accounting) {
	t.Helper()
	c, err := metrics.NewCollector(dir, metrics.CollectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 8, 12, 14, 0, 0, 0, time.UTC).UnixNano()
	for i := range 3 {
		start := base + int64(i)*int64(time.Second)
		c.Add(&metrics.Record{Phase: metrics.PhaseProfiling, RequestStartNs: start,
			FirstChunkNs: start + 100e6, SecondChunkNs: start + 110e6, LastChunkNs: start + 200e6, RequestEndNs: start + 201e6,
			Usage: &metrics.Usage{PromptTokens: 1000, CompletionTokens: 11, TotalTokens: 1011}, HitBlocks: 1, TotalBlocks: 2})
	}
	if _, err := c.Finish(metrics.RunInfo{BenchmarkID: "b1", Accounting: acct}); err != nil && acct.Sent == 3 {
		t.Fatal(err)
	}
}

func TestReportCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeArtifacts(t, dir, metrics.Accounting{Sent: 3, ProfilingOK: 3})
	if err := os.Remove(filepath.Join(dir, metrics.FileAggregateCSV)); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := runMain(context.Background(), []string{"report", dir}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "Profiling: 3 ok") || !strings.Contains(out.String(), "Time to First Token (ms)") {
		t.Errorf("summary:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, metrics.FileAggregateCSV)); err != nil {
		t.Errorf("CSV not rewritten: %v", err)
	}
	png, err := os.ReadFile(filepath.Join(dir, "metrics_plots.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("metrics_plots.png not rendered: %v", err)
	}
	// Plot warnings (no server metrics here) are on stderr and in the JSON,
	// once however often report runs.
	t.Logf("stderr: %s", errb.String())
	count := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, metrics.FileAggregateJSON))
		var agg struct {
			Metadata struct{ Warnings []string } `json:"metadata"`
		}
		if err := json.Unmarshal(b, &agg); err != nil {
			t.Fatal(err)
		}
		return len(agg.Metadata.Warnings)
	}
	n := count()
	if strings.Contains(errb.String(), "warning:") != (n > 0) {
		t.Errorf("stderr warnings and metadata.warnings (%d) disagree:\n%s", n, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := runMain(context.Background(), []string{"report", dir}, &out, &errb); code != exitOK || count() != n {
		t.Errorf("second report: exit %d, %d warnings (want %d)", code, count(), n)
	}
}

func TestReportCommandNoPlot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeArtifacts(t, dir, metrics.Accounting{Sent: 3, ProfilingOK: 3})
	var out, errb bytes.Buffer
	if code := runMain(context.Background(), []string{"report", "--no-plot", dir}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "metrics_plots.png")); !os.IsNotExist(err) {
		t.Errorf("--no-plot rendered the plot (%v)", err)
	}
}

func TestReportCommandErrors(t *testing.T) {
	t.Parallel()
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, metrics.FileRecords), []byte("{\"metadata\":{\"request_start_ns\":1,\"request_end_ns\":2}}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mismatch := t.TempDir()
	writeArtifacts(t, mismatch, metrics.Accounting{Sent: 5, ProfilingOK: 3})
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"report", "--help"}, exitOK, "agentperf report results/aiperf_artifacts"},
		{"no folder", []string{"report"}, exitUsage, "at least one artifact folder"},
		{"missing folder", []string{"report", filepath.Join(bad, "nope")}, exitUsage, "profile_export.jsonl"},
		{"malformed line", []string{"report", bad}, exitUsage, "profile_export.jsonl:2"},
		{"accounting", []string{"report", "--no-plot", mismatch}, exitRunFailed, "2 requests are missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runMain(context.Background(), c.args, &out, &errb)
			if code != c.code || !strings.Contains(out.String()+errb.String(), c.want) {
				t.Fatalf("exit %d (want %d), output:\n%s%s\nwant %q", code, c.code, out.String(), errb.String(), c.want)
			}
		})
	}
}

// reportFixture is the inferencex package's two-engine artifact folder.
const reportFixture = "../../analysis/inferencex/testdata/two-engine"

func runReportCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runMain(context.Background(), append([]string{"report"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestReportInferenceXCommand(t *testing.T) {
	t.Parallel()
	code, out, errs := runReportCLI(t, "--format", "inferencex", "--tp", "8", "--hw", "mi355x", "--env", "CONC=8",
		"--env", "KV_OFFLOADING=none", "--server-log", reportFixture+"/server.log", reportFixture)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("stdout is not the result JSON: %v\n%s", err, out)
	}
	if doc["tp"] != 8.0 || doc["hw"] != "mi355x" || doc["conc"] != 8.0 || doc["kv_cache_pool_tokens"] != 32000.0 {
		t.Errorf("tp %v hw %v conc %v pool %v", doc["tp"], doc["hw"], doc["conc"], doc["kv_cache_pool_tokens"])
	}
	pg := doc["request_metrics"].(map[string]any)["throughput"].(map[string]any)["per_gpu"].(map[string]any)
	if pg["total_tput_tps"] != 321.0625 {
		t.Errorf("per-GPU throughput %v, want 2568.5 tok/s over 8 GPUs", pg["total_tput_tps"])
	}
	// v2 to a file; the defaulted settings are warnings on stderr.
	path := filepath.Join(t.TempDir(), "agg.json")
	code, out, errs = runReportCLI(t, "--format", "inferencex", "--schema", "v2", "-o", path, reportFixture)
	if code != exitOK || out != "" {
		t.Fatalf("exit %d, stdout %q: %s", code, out, errs)
	}
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &doc) != nil || doc["mean_ttft"] != 0.25 {
		t.Fatalf("v2 file: %v %s", err, b)
	}
	if !strings.Contains(errs, "warning: CONC not set") || !strings.Contains(errs, "warning: TP not set") {
		t.Errorf("stderr lacks the defaulted settings:\n%s", errs)
	}
	// The help names the fields where the result differs from InferenceX's processor.
	_, out, errs = runReportCLI(t, "--help")
	if !strings.Contains(out+errs, "v2 cpu_kv_cache_usage_pct") || !strings.Contains(out+errs, "--format inferencex differs") {
		t.Errorf("help lacks the differences:\n%s", out+errs)
	}
}

// reportRunDir writes a three-record run under a name that carries its TP
// and concurrency, as InferenceX names result folders.
func reportRunDir(t *testing.T, root string, tp, conc int) string {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprintf("agentic_m_fp8_vllm_tp%d-pp1-ep1_conc%d_h200", tp, conc))
	writeArtifacts(t, dir, metrics.Accounting{Sent: 3, ProfilingOK: 3})
	return dir
}

func TestReportSweepCommand(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a, b := reportRunDir(t, root, 8, 16), reportRunDir(t, root, 4, 32)
	missing := filepath.Join(root, "agentic_m_tp4_conc64_h200")
	os.MkdirAll(missing, 0o755)
	png := filepath.Join(root, "pareto.png")
	code, out, errs := runReportCLI(t, a, b, missing, "--plot", png)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[2], "| 4 | 32 | 3 |") || !strings.HasPrefix(lines[3], "| 8 | 16 | 3 |") {
		t.Errorf("rows not sorted by TP then concurrency:\n%s", out)
	}
	if !strings.Contains(out, "Failed:\n- TP4/conc64 ("+missing+"): not an artifact folder") {
		t.Errorf("the unreadable folder is not listed apart:\n%s", out)
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 || !strings.Contains(errs, "TP4/conc64") {
		t.Errorf("plot: %v; stderr %s", err, errs)
	}
	code, out, _ = runReportCLI(t, "--format", "csv", "--tp", "2,2", "--conc", "5,6", a, b)
	if code != exitOK || !strings.HasPrefix(out, "config,tp,conc,requests,rps") || !strings.Contains(out, "\n,2,5,3,") {
		t.Errorf("csv with --tp/--conc lists (exit %d):\n%s", code, out)
	}
	code, out, _ = runReportCLI(t, "--format", "json", a)
	if code != exitOK || !strings.Contains(out, `"tp": 8`) {
		t.Errorf("json (exit %d):\n%s", code, out)
	}
	// Configuration names, one per folder: --config-name, and its old
	// name --config, which is not read as a YAML file here.
	for _, flag := range []string{"--config-name", "--config"} {
		code, out, errs = runReportCLI(t, "--format", "csv", flag, "base,spec", a, b)
		if code != exitOK || !strings.Contains(out, "\nbase,8,16,3,") || !strings.Contains(out, "\nspec,4,32,3,") {
			t.Errorf("csv with %s base,spec (exit %d):\n%s%s", flag, code, out, errs)
		}
	}
}

func TestReportCheckCommand(t *testing.T) {
	t.Parallel()
	// The fixture has 1 failed request of 5 completed (20 %).
	code, out, _ := runReportCLI(t, "--check", "--failed-request-threshold", "0.25", reportFixture)
	// server_engine (the engines table) is the tenth check.
	if code != exitOK || !strings.Contains(out, "passed (10 of 10 checks passed)") || !strings.Contains(out, "ok   server_engine            server metrics of vLLM") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	code, out, _ = runReportCLI(t, "--check", "--failed-request-threshold", "0.1", reportFixture)
	if code != exitRunFailed || !strings.Contains(out, "FAIL error_rate") || !strings.Contains(out, "FAILED (9 of 10") {
		t.Errorf("over the threshold: exit %d (want 1):\n%s", code, out)
	}
	mismatch := t.TempDir()
	writeArtifacts(t, mismatch, metrics.Accounting{Sent: 5, ProfilingOK: 3})
	code, out, _ = runReportCLI(t, "--check", mismatch)
	if code != exitRunFailed || !strings.Contains(out, "FAIL request_accounting") {
		t.Errorf("accounting: exit %d (want 1):\n%s", code, out)
	}
}

func TestReportUsageErrors(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a, b := reportRunDir(t, root, 8, 16), reportRunDir(t, root, 4, 32)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--schema", "v2", a}, "--schema applies to --format inferencex"},
		{[]string{"--format", "inferencex", "--schema", "v4", a}, `unknown result schema "v4"`},
		{[]string{"--format", "inferencex", a, b}, "one run; got 2 folders"},
		{[]string{"--format", "yaml", a}, `--format "yaml"`},
		{[]string{"--server-log", "x.log", a, b}, "--server-log and --env apply to --format inferencex"},
		{[]string{"--hw", "h200", a, b}, "--hw applies to --format inferencex"},
		{[]string{"--tp", "4,8,8", a, b}, "3 values for 2 folders"},
		{[]string{"--format", "inferencex", "--server-log", filepath.Join(root, "nope.log"), a}, "nope.log"},
		{[]string{"--format", "inferencex", "--tp", "x", a}, `TP="x" is not an integer`},
		{[]string{"--format", "inferencex", "--env", "KV_OFFLOADING=dram", a}, "KV_OFFLOAD_BACKEND is required"},
		{[]string{"--format", "inferencex", root}, "2 child folders do"},
		{[]string{"--check", filepath.Join(root, "nope")}, "no such file"},
		{[]string{"--no-plot", "--check", a}, "--no-plot and --no-html apply"},
		{[]string{"--failed-request-threshold", "0.2", a, b}, "apply to --check only"},
		{[]string{"--check", "--failed-request-threshold", "2", a}, "must be in [0, 1]"},
		{[]string{"--plot", filepath.Join(root, "p.png"), "--format", "json", "-o", filepath.Join(root, "no", "such", "t.json"), a}, "-o"},
	} {
		code, out, errs := runReportCLI(t, c.args...)
		if code != exitUsage || !strings.Contains(out+errs, c.want) {
			t.Errorf("%v: exit %d (want 2), output:\n%s%s\nwant %q", c.args, code, out, errs, c.want)
		}
	}
}

// TestReportKeepsACompleteAggregate is the fault campaign's repro without
// a full disk: a run whose record stream failed leaves a complete
// aggregate (its accounting adds up: it counts every record) beside a
// profile_export.jsonl.partial that lacks the last records. `report` used
// to recompute from the partial file and write that over the good
// aggregate. Now the aggregate is kept byte for byte, the recomputation
// goes to profile_export_aiperf_from_partial.json, the command says which
// records the partial file lacks and exits 1, the copied warning that "the
// aggregates cover every record" is not carried into the recomputation,
// and the plot reads the partial records as the aggregates do. --force
// replaces the aggregate.
func TestReportKeepsACompleteAggregate(t *testing.T) {
	dir := t.TempDir()
	writeArtifacts(t, dir, metrics.Accounting{Sent: 3, ProfilingOK: 3})
	aggPath := filepath.Join(dir, metrics.FileAggregateJSON)
	full := readRecordLines(t, filepath.Join(dir, metrics.FileRecords))
	// The state a failed write leaves: two of the three records on disk.
	if err := os.WriteFile(filepath.Join(dir, metrics.FileRecords+".partial"), []byte(strings.Join(full[:2], "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, metrics.FileRecords))
	os.Rename(filepath.Join(dir, metrics.FileOverflow), filepath.Join(dir, metrics.FileOverflow+".partial"))
	w := "profile_export.jsonl is incomplete: a write failed (no space left on device); profile_export.jsonl.partial holds the records written before, each complete, and " + metrics.WarnAggregatesCoverAll
	if err := metrics.AddWarnings(dir, w); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(aggPath)
	if err != nil {
		t.Fatal(err)
	}

	var out, errb bytes.Buffer
	code := runMain(context.Background(), []string{"report", dir}, &out, &errb)
	if code != exitRunFailed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitRunFailed, out.String(), errb.String())
	}
	after, _ := os.ReadFile(aggPath)
	if !bytes.Equal(before, after) {
		t.Fatalf("report changed the complete aggregate:\nbefore %s\nafter %s", before, after)
	}
	for _, want := range []string{"was kept", "lacks 1 profiling ok records of the 3 requests sent", metrics.FileAggregateFromPartialJSON, "--force"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, errb.String())
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
		if !strings.HasPrefix(line, "agentperf: ") {
			t.Errorf("an error line without the agentperf: prefix: %q", line)
		}
	}
	if strings.Contains(out.String()+errb.String(), metrics.WarnAggregatesCoverAll) {
		t.Errorf("the recomputation repeats that the aggregates cover every record:\n%s\n%s", out.String(), errb.String())
	}
	if strings.Contains(errb.String(), "does not exist") {
		t.Errorf("the plot or report.html did not read the partial records:\n%s", errb.String())
	}
	var fromPartial map[string]any
	b, err := os.ReadFile(filepath.Join(dir, metrics.FileAggregateFromPartialJSON))
	if err != nil || json.Unmarshal(b, &fromPartial) != nil {
		t.Fatalf("no recomputation beside the aggregate: %v", err)
	}
	acct := fromPartial["metadata"].(map[string]any)["request_accounting"].(map[string]any)
	if acct["profiling_ok"] != 2.0 || acct["adds_up"] != false || fromPartial["was_cancelled"] != true {
		t.Errorf("the recomputation: accounting %v, was_cancelled %v", acct, fromPartial["was_cancelled"])
	}
	if ws := fmt.Sprint(fromPartial["metadata"].(map[string]any)["warnings"]); strings.Contains(ws, metrics.WarnAggregatesCoverAll) {
		t.Errorf("the recomputation's warnings claim it covers every record: %s", ws)
	}

	errb.Reset()
	if code := runMain(context.Background(), []string{"report", "--force", "--no-plot", "--no-html", dir}, &out, &errb); code != exitRunFailed {
		t.Fatalf("--force: exit %d\n%s", code, errb.String())
	}
	after, _ = os.ReadFile(aggPath)
	if bytes.Equal(before, after) {
		t.Errorf("--force did not replace the aggregate")
	}
}

// readRecordLines returns the non-blank lines of a JSONL file.
func readRecordLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestReportRepeatedRun: `agentperf report DIR` on the folder of a
// profile with --num-profile-runs (its runs under profile_runs/, the
// pooled summary under aggregate/) recomputes each run, then pools the
// summary again from them (the same bytes: nothing changed) and prints it
// with the pooled sweep-table row; --check checks each run; the sweep
// table has one pooled row for it; --format inferencex, the result of one
// run, names the run folders to pass. Without a pooled summary (the runs
// stopped before it) the runs are still recomputed and the warning says
// so.
func TestReportRepeatedRun(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	args := append([]string{"profile", "--concurrency", "2", "--num-profile-runs", "2"}, repeatArgs(dir)...)
	if code, out, errOut := runProfileCLI(context.Background(), t, args...); code != exitOK {
		t.Fatalf("profile: exit %d\n%s\n%s", code, out, errOut)
	}
	run1, run2 := filepath.Join(dir, "profile_runs", "run_0001"), filepath.Join(dir, "profile_runs", "run_0002")
	pooledPath := filepath.Join(dir, metrics.DirPooled, metrics.FilePooledSummary)
	pooled, err := os.ReadFile(pooledPath)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runReportCLI(t, "--no-plot", "--no-html", dir)
	if code != exitOK {
		t.Fatalf("report: exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"== profile run 1 of 2: " + run1 + "\n", "== profile run 2 of 2: " + run2 + "\n",
		"pooled over 2 profile runs (" + dir, "pooled summary: " + pooledPath, "| TP | Conc | Runs |"} {
		if !strings.Contains(out, want) {
			t.Errorf("report %s: stdout lacks %q:\n%s", dir, want, out)
		}
	}
	if strings.Count(out, "Time to First Token (ms)") != 2 || strings.Count(out, "Sweep table row") != 3 {
		t.Errorf("want each run's summary and row, then the pooled row:\n%s", out)
	}
	if after, _ := os.ReadFile(pooledPath); !bytes.Equal(after, pooled) {
		t.Errorf("the pooled summary of the recomputed runs differs:\nbefore %s\nafter %s", pooled, after)
	}

	code, out, _ = runReportCLI(t, "--check", dir)
	if code != exitOK || !strings.Contains(out, "check "+run1+": passed") || !strings.Contains(out, "check "+run2+": passed") {
		t.Errorf("--check: exit %d, want each run checked:\n%s", code, out)
	}
	code, out, errs = runReportCLI(t, "--format", "json", dir)
	var table struct {
		Runs []map[string]any `json:"runs"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &table) != nil || len(table.Runs) != 1 || table.Runs[0]["runs"] != 2.0 || table.Runs[0]["dir"] != dir {
		t.Errorf("--format json: exit %d, want one pooled row of 2 runs:\n%s%s", code, out, errs)
	}
	code, _, errs = runReportCLI(t, "--format", "inferencex", dir)
	if code != exitUsage || !strings.Contains(errs, dir+" is a repeated run") || !strings.Contains(errs, run1+", "+run2) {
		t.Errorf("--format inferencex: exit %d (want 2), want the run folders named:\n%s", code, errs)
	}

	if err := os.Remove(pooledPath); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runReportCLI(t, "--no-plot", "--no-html", dir)
	if code != exitOK || !strings.Contains(out, "== profile run 2 of 2: ") || !strings.Contains(errs, "has no pooled summary") {
		t.Errorf("without the pooled summary: exit %d\n%s\n%s", code, out, errs)
	}
}
