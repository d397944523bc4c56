package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/capacity"
	"github.com/agentperf/agentperf/metrics"
)

// repeatArgs are the profile flags of the repeated sweep and search tests:
// the corpus (synthetic:traces=8), one-second runs.
func repeatArgs(dir string, extra ...string) []string {
	return append([]string{"--url", "sim://?zero-latency", "--public-dataset", "synthetic:traces=8", "--model", "agentperf-sim", "--tokenizer", "builtin",
		"--streaming", "--use-server-token-count", "--trace-idle-gap-cap-seconds", "0.01", "--benchmark-duration", "1",
		"--random-seed", "7", "--ui-type", "none", "--no-plot", "--output-artifact-dir", dir}, extra...)
}

// sweepRows reads sweep_table.json's included rows by concurrency.
func sweepRows(t *testing.T, dir string) map[int]map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, capacity.SweepTableJSON))
	if err != nil {
		t.Fatal(err)
	}
	var tab struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal(b, &tab); err != nil {
		t.Fatal(err)
	}
	out := map[int]map[string]any{}
	for _, r := range tab.Runs {
		out[int(r["conc"].(float64))] = r
	}
	return out
}

// checkRepeatedPoint checks that the sweep point in dir/c<c> is a
// repeated run of n runs (each a complete run folder with its InferenceX
// JSON, the pooled summary listing them) and that its table row is built
// from them: the mean and interval of the runs' request throughput (the
// pooled summary's request_throughput.avg), their summed requests.
func checkRepeatedPoint(t *testing.T, dir string, c, n int, row map[string]any) {
	t.Helper()
	pd := filepath.Join(dir, capacity.PointDir(c))
	sum, err := metrics.ReadPooledSummary(pd)
	if err != nil {
		t.Fatalf("c%d: %v", c, err)
	}
	if sum.RunsRequested != n || sum.RunsDone != n || len(sum.Runs) != n {
		t.Fatalf("c%d: pooled summary asked %d, done %d, runs %v; want %d", c, sum.RunsRequested, sum.RunsDone, sum.Runs, n)
	}
	requests := 0
	for k := 1; k <= n; k++ {
		rd := filepath.Join(pd, "profile_runs", fmt.Sprintf("run_%04d", k))
		for _, f := range []string{"profile_export.jsonl", "profile_export_aiperf.json", "report.html", capacity.PointInferenceX} {
			if _, err := os.Stat(filepath.Join(rd, f)); err != nil {
				t.Errorf("c%d run %d: %v", c, k, err)
			}
		}
		agg, err := metrics.ReadAggregateFile(rd)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := agg.Stat("request_count")
		v, _ := st.Avg.Float()
		requests += int(v)
	}
	if _, err := os.Stat(filepath.Join(pd, "profile_export_aiperf.json")); err == nil {
		t.Errorf("c%d: a repeated point has an aggregate of its own beside its runs' (a figure of unclear scope)", c)
	}
	if row == nil {
		t.Fatalf("c%d: no row in the table", c)
	}
	if ots := sum.Metrics["output_token_throughput.avg"]; math.Abs(row["output_tok_s"].(float64)-ots.Mean) > 1e-9*ots.Mean {
		t.Errorf("c%d: row output_tok_s %v, the pooled summary's mean %v", c, row["output_tok_s"], ots.Mean)
	}
	rps := sum.Metrics["request_throughput.avg"]
	iv, _ := row["intervals"].(map[string]any)
	rpsIv, _ := iv["rps"].([]any)
	switch {
	case int(row["runs"].(float64)) != n:
		t.Errorf("c%d: row runs %v, want %d", c, row["runs"], n)
	case int(row["requests"].(float64)) != requests:
		t.Errorf("c%d: row requests %v, want the %d of its runs summed", c, row["requests"], requests)
	case math.Abs(row["rps"].(float64)-rps.Mean) > 1e-9*rps.Mean:
		t.Errorf("c%d: row rps %v, the pooled summary's mean %v", c, row["rps"], rps.Mean)
	case len(rpsIv) != 2 || math.Abs(rpsIv[0].(float64)-rps.CILow) > 1e-6*rps.Mean || math.Abs(rpsIv[1].(float64)-rps.CIHigh) > 1e-6*rps.Mean:
		t.Errorf("c%d: row rps interval %v, the pooled summary's [%v, %v]", c, rpsIv, rps.CILow, rps.CIHigh)
	}
}

// TestSweepRepeats: a two-point sweep with --num-profile-runs 2 runs each
// point twice against the one simulator (each point's runs and pooled
// summary), its table reads them (mean ± interval, Runs column), the
// manifest records the repeat settings, and the same sweep again with
// --num-profile-runs 3 runs every point again; compare of two such sweeps
// gives intervals over runs at each concurrency.
func TestSweepRepeats(t *testing.T) {
	clearAIPerfEnv(t)
	a := t.TempDir()
	args := append([]string{"sweep", "--concurrency", "2,4", "--num-profile-runs", "2"}, repeatArgs(a)...)
	code, out, errOut := runProfileCLI(context.Background(), t, args...)
	if code != 0 {
		t.Fatalf("sweep: exit %d\n%s\n%s", code, out, errOut)
	}
	rows := sweepRows(t, a)
	for _, c := range []int{2, 4} {
		checkRepeatedPoint(t, a, c, 2, rows[c])
	}
	md, _ := os.ReadFile(filepath.Join(a, capacity.SweepTableMD))
	if !strings.Contains(string(md), "| Runs |") || !strings.Contains(string(md), " ± ") || !strings.Contains(string(md), "mean over the runs ± the half-width of its 95% Student-t confidence interval") {
		t.Errorf("the table does not say its figures are means over runs with their intervals:\n%s", md)
	}
	pts, err := capacity.ReadManifest(a)
	if err != nil || len(pts) != 2 || pts[0].Settings["--num-profile-runs"] != "2" {
		t.Fatalf("manifest %+v (%v): want both points with --num-profile-runs 2 recorded", pts, err)
	}
	html, _ := os.ReadFile(filepath.Join(a, capacity.SweepHTML))
	if !strings.Contains(string(html), "c2/profile_runs/run_0002/report.html") || !strings.Contains(string(html), "c4/aggregate/profile_export_aiperf_aggregate.json") {
		t.Errorf("sweep.html does not link the points' runs and pooled summaries:\n%s", html)
	}

	// A second sweep of the same settings (another seed: the baseline
	// and treatment differ) for compare.
	b := t.TempDir()
	argsB := append([]string{"sweep", "--concurrency", "2,4", "--num-profile-runs", "2"}, repeatArgs(b, "--random-seed", "8")...)
	if code, out, errOut := runProfileCLI(context.Background(), t, argsB...); code != 0 {
		t.Fatalf("second sweep: exit %d\n%s\n%s", code, out, errOut)
	}
	cmpDir := t.TempDir()
	code, out, errOut = runProfileCLI(context.Background(), t, "compare", "--output-dir", cmpDir, "--bootstrap-resamples", "200", a, b)
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, c := range []string{"══ concurrency 2 ══", "══ concurrency 4 ══"} {
		i := strings.Index(out, c)
		if i < 0 {
			t.Fatalf("compare output lacks %q:\n%s", c, out)
		}
		if !strings.Contains(out[i:], "bootstrap interval over runs") {
			t.Errorf("%s: the interval is not over runs:\n%s", c, out[i:])
		}
	}
	if strings.Contains(out, "interval over requests") {
		t.Errorf("a point of repeated runs was compared over requests:\n%s", out)
	}

	// The same sweep with three runs per point: nothing is reused.
	args = append([]string{"sweep", "--concurrency", "2,4", "--num-profile-runs", "3"}, repeatArgs(a)...)
	code, out, errOut = runProfileCLI(context.Background(), t, args...)
	if code != 0 {
		t.Fatalf("sweep with 3 runs: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "--num-profile-runs 2 → 3") || strings.Contains(errOut, "complete from an earlier sweep") {
		t.Errorf("the sweep with --num-profile-runs 3 does not say it runs the points of 2 again:\n%s", errOut)
	}
	rows = sweepRows(t, a)
	for _, c := range []int{2, 4} {
		checkRepeatedPoint(t, a, c, 3, rows[c])
		if _, err := os.Stat(filepath.Join(a, capacity.PointDir(c)+".replaced", "aggregate", metrics.FilePooledSummary)); err != nil {
			t.Errorf("c%d of the two-run sweep was not kept aside: %v", c, err)
		}
	}
	// Once more with 3: every point is reused.
	code, out, errOut = runProfileCLI(context.Background(), t, args...)
	if code != 0 || strings.Count(errOut, "complete from an earlier sweep") != 2 {
		t.Errorf("the same sweep again: exit %d, want both points reused:\n%s", code, errOut)
	}
}

// TestSearchRepeats: with --num-profile-runs 2 each probe runs twice into
// its folder's profile_runs and is judged on the records of both runs
// pooled.
func TestSearchRepeats(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	args := append([]string{"search", "--slo", "e2el.p50<=60s,errors<=50%", "--concurrency-range", "1:2", "--resolution", "1", "--num-profile-runs", "2",
		"--client-max-cpu", "-1", "--client-max-lateness", "-1", "--client-max-sched-latency", "-1"}, repeatArgs(dir)...)
	code, out, errOut := runProfileCLI(context.Background(), t, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, capacity.SearchResultJSON))
	if err != nil {
		t.Fatal(err)
	}
	var res capacity.SearchJSON
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Repeats != 2 || res.Best != 2 || len(res.Probes) != 2 || res.Settings["--num-profile-runs"] != "2" {
		t.Fatalf("result: repeats %d, best %d, %d probes, settings' runs %q; want 2, 2, 2, 2\n%s", res.Repeats, res.Best, len(res.Probes), res.Settings["--num-profile-runs"], b)
	}
	for i, p := range res.Probes {
		pd := capacity.ProbeDir(i+1, p.Concurrency)
		want := []string{pd + "/profile_runs/run_0001", pd + "/profile_runs/run_0002"}
		if strings.Join(p.Dirs, " ") != strings.Join(want, " ") {
			t.Errorf("probe %d dirs %v, want %v", i+1, p.Dirs, want)
		}
		// Pooled: the e2el term's samples are both runs' successful
		// requests.
		n := 0
		for _, d := range want {
			for _, r := range readRecords(t, filepath.Join(dir, d, "profile_export.jsonl")) {
				md := r["metadata"].(map[string]any)
				if md["benchmark_phase"] == "profiling" && r["error"] == nil {
					n++
				}
			}
		}
		var e2e *capacity.TermJSON
		for k := range p.Terms {
			if strings.HasPrefix(p.Terms[k].Name, "request_latency") || strings.HasPrefix(p.Terms[k].Name, "e2e") {
				e2e = &p.Terms[k]
			}
		}
		if e2e == nil || p.Requests != n || e2e.Samples != n {
			t.Errorf("probe %d: requests %d, e2e term %+v; want both runs' %d pooled", i+1, p.Requests, e2e, n)
		}
	}
}
