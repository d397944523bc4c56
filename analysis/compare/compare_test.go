package compare_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/analysis/compare"
	"github.com/agentperf/agentperf/capacity"
	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/run"
)

// simRun runs the simulator at url into a folder and returns it.
func simRun(t *testing.T, url string, seed int64) string {
	t.Helper()
	s := run.NewSpec()
	s.Corpus.Traces = dataset.Synthesize(dataset.SynthOptions{Seed: 9, Traces: 16, MinTurns: 6, MaxTurns: 14, TimeScale: 0.01, MaxContext: 16000})
	s.Replay.URL, s.Replay.Models = url, []string{"demo"}
	s.Replay.Concurrency, s.Replay.Seed, s.Replay.Streaming = 16, seed, true
	s.Replay.BenchmarkDuration, s.Replay.TraceIdleGapCap = 6*time.Second, 10*time.Millisecond
	s.Replay.SynthesisMaxOSL = 16 // short answers: many requests in 4 s
	s.OutputDir, s.NoPlot = t.TempDir(), true
	if _, err := run.Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s.OutputDir
}

func load(t *testing.T, dirs ...string) []*compare.Folder {
	var fs []*compare.Folder
	for _, d := range dirs {
		f, err := compare.Load(d)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	return fs
}

// TestCompareSlowerPrefillAndIdenticalRuns: a simulator whose prefill is
// half as fast gives a TTFT "slower" with an interval above 1; two runs of
// the same seed and settings give "no difference"; the outputs are
// written.
func TestCompareSlowerPrefillAndIdenticalRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("three 4 s runs")
	}
	t.Parallel()
	// The treatment's simulator prefills at half the baseline's speed.
	a := simRun(t, "sim://?decode-base-ms=2&prefill-tokens-per-sec=40000", 21)
	b := simRun(t, "sim://?decode-base-ms=2&prefill-tokens-per-sec=20000", 21)
	a2 := simRun(t, "sim://?decode-base-ms=2&prefill-tokens-per-sec=40000", 21)

	res, err := compare.Compare(load(t, a, b, a2), compare.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	get := func(dir, metric string) compare.Row {
		for _, r := range res.Rows[dir] {
			if r.Metric == metric {
				return r
			}
		}
		t.Fatalf("no %s for %s", metric, dir)
		return compare.Row{}
	}
	if r := get(b, "TTFT p50"); r.Verdict != compare.Slower || !(r.Low > 1) || !(r.Ratio > 1.3) {
		t.Errorf("halved prefill: TTFT p50 %+v (%d and %d requests), want slower with an interval above 1", r, r.NA, r.NB)
	}
	for _, m := range []string{"TTFT p50", "ITL p50", "E2E latency p50"} {
		if r := get(a2, m); r.Verdict != compare.NoDifference || !(r.Low <= 1 && r.High >= 1) {
			t.Errorf("identical seeds: %s %+v, want no difference", m, r)
		}
	}
	var tbl bytes.Buffer
	res.WriteTable(&tbl)
	if !strings.Contains(tbl.String(), "slower") || !strings.Contains(tbl.String(), "no difference at 95%") {
		t.Errorf("table:\n%s", tbl.String())
	}
	viaDirs, err := compare.Dirs([]string{a, b}, compare.Options{Seed: 1})
	if r, ok := viaDirs.(*compare.Result); err != nil || !ok || len(r.Treatments) != 1 || viaDirs.Written("o") != "\nwritten: o/{compare.html,compare.png,compare.json}\n" {
		t.Errorf("Dirs of run folders: %T %v", viaDirs, err)
	}
	out := t.TempDir()
	if err := res.Write(out); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(out, compare.FileHTML))
	if err != nil || !bytes.Contains(page, []byte(`class="slower"`)) || bytes.Contains(page, []byte("<script")) || bytes.Contains(page, []byte("<link")) {
		t.Errorf("compare.html: %v (self-contained, with the verdicts)", err)
	}
	if fi, err := os.Stat(filepath.Join(out, compare.FilePNG)); err != nil || fi.Size() < 1000 {
		t.Errorf("compare.png: %v", err)
	}
}

func TestCompareRefusesDifferentCorpora(t *testing.T) {
	t.Parallel()
	a := &compare.Folder{Dir: "A", Settings: map[string]string{"metadata.scenario": "", "metadata.dataset.hf_dataset_name": `"x"`}}
	b := &compare.Folder{Dir: "B", Settings: map[string]string{"metadata.scenario": "", "metadata.dataset.hf_dataset_name": `"y"`}}
	_, err := compare.Compare([]*compare.Folder{a, b}, compare.Options{})
	var de *compare.DifferentSettingsError
	var ie *compare.InputError // what a CLI exits 2 on
	if !errors.As(err, &de) || de.Setting != "metadata.dataset.hf_dataset_name" || !strings.Contains(err.Error(), "--allow-different") || !errors.As(err, &ie) {
		t.Fatalf("err = %v", err)
	}
	res, err := compare.Compare([]*compare.Folder{a, b}, compare.Options{AllowDifferent: true})
	if err != nil || len(res.Notes) != 1 {
		t.Fatalf("allowed: %v %+v", err, res)
	}
	c := &compare.Folder{Dir: "C", Settings: map[string]string{"metadata.scenario": "agentx", "metadata.dataset.hf_dataset_name": `"x"`}}
	if _, err := compare.Compare([]*compare.Folder{a, c}, compare.Options{}); err == nil || !strings.Contains(err.Error(), "metadata.scenario") {
		t.Errorf("scenario: %v", err)
	}
}

// folderOfRuns builds a folder whose every metric has, per run, the
// given requests' values.
func folderOfRuns(dir string, runs ...[]float64) *compare.Folder {
	f := &compare.Folder{Dir: dir, Runs: len(runs), Settings: map[string]string{}, Values: make([][]float64, len(compare.Metrics))}
	for _, r := range runs {
		per := make([][]float64, len(compare.Metrics))
		for k := range compare.Metrics {
			per[k] = r
			f.Values[k] = append(f.Values[k], r...)
		}
		f.PerRun = append(f.PerRun, per)
	}
	return f
}

func spread(center float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = center * (0.98 + 0.04*float64(i)/float64(n))
	}
	return out
}

// TestCompareOverRuns: with repeated runs on both sides the bootstrap
// resamples runs, so run-to-run variation widens the interval: B's runs
// sit 10 % above A's on average but A's own runs vary by ±20 %, which
// the requests alone (many, tight within a run) would call "slower".
func TestCompareOverRuns(t *testing.T) {
	t.Parallel()
	a := folderOfRuns("A", spread(80, 200), spread(100, 200), spread(120, 200))
	b := folderOfRuns("B", spread(110, 200), spread(110, 200), spread(110, 200))
	res, err := compare.Compare([]*compare.Folder{a, b}, compare.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Over["B"] != "runs" {
		t.Fatalf("resampled over %q, want runs", res.Over["B"])
	}
	if r := res.Rows["B"][0]; r.Verdict != compare.NoDifference || !(r.Low < 1 && r.High > 1) {
		t.Errorf("over runs: %+v, want no difference", r)
	}
	// The same requests as one run each: the requests decide, and B is
	// slower.
	a1, b1 := folderOfRuns("A", append(append(spread(80, 200), spread(100, 200)...), spread(120, 200)...)), folderOfRuns("B", spread(110, 600))
	res, err = compare.Compare([]*compare.Folder{a1, b1}, compare.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Rows["B"][0]; res.Over["B"] != "requests" || r.Verdict != compare.Slower {
		t.Errorf("over requests: %+v (%s), want slower", r, res.Over["B"])
	}
}

// copyDir copies a run folder's files (not its subfolders).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	es, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCompareSweeps: two sweep folders are compared at the concurrencies
// they share, and the curves are overlaid in compare.png, which
// compare.html embeds.
func TestCompareSweeps(t *testing.T) {
	if testing.Short() {
		t.Skip("a run")
	}
	t.Parallel()
	runDir := simRun(t, "sim://?decode-base-ms=2&prefill-tokens-per-sec=40000", 4)
	mk := func(concs ...int) string {
		dir := t.TempDir()
		var pts []capacity.PointRecord
		for _, c := range concs {
			copyDir(t, runDir, filepath.Join(dir, capacity.PointDir(c)))
			pts = append(pts, capacity.PointRecord{Concurrency: c, Dir: capacity.PointDir(c), Status: capacity.PointOK})
		}
		b, err := capacity.EncodeManifest(pts)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, capacity.ManifestFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a, b := mk(4, 8, 16), mk(8, 16, 32)
	if !compare.IsSweep(a) || compare.IsSweep(runDir) {
		t.Fatal("IsSweep")
	}
	var sweeps []*compare.Sweep
	for _, d := range []string{a, b} {
		s, err := compare.LoadSweep(d)
		if err != nil {
			t.Fatal(err)
		}
		sweeps = append(sweeps, s)
	}
	res, err := compare.CompareSweeps(sweeps, compare.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Concurrency) != 2 || res.Concurrency[0] != 8 || res.Concurrency[1] != 16 {
		t.Fatalf("shared concurrencies %v, want [8 16]", res.Concurrency)
	}
	for _, c := range res.Concurrency {
		for _, r := range res.PerPoint[c].Rows[b] {
			if r.Verdict == compare.Slower || r.Verdict == compare.Faster {
				t.Errorf("c=%d: the same records differ: %+v", c, r)
			}
		}
	}
	viaDirs, err := compare.Dirs([]string{a, b}, compare.Options{Seed: 1})
	if sr, ok := viaDirs.(*compare.SweepResult); err != nil || !ok || len(sr.Concurrency) != 2 || viaDirs.Written("o") != "written: o/{compare.html,compare.png} (the curves overlaid)\n" {
		t.Errorf("Dirs of sweep folders: %T %v", viaDirs, err)
	}
	out := t.TempDir()
	if err := res.Write(out); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(out, compare.FileHTML))
	if err != nil || !bytes.Contains(page, []byte("data:image/png;base64,")) || !bytes.Contains(page, []byte("concurrency 16")) {
		t.Errorf("compare.html: %v", err)
	}
}

// TestDirsInputError: a folder that is not a run folder is an input error
// (the CLI's exit 2), and two run folders compare as runs.
func TestDirsInputError(t *testing.T) {
	t.Parallel()
	_, err := compare.Dirs([]string{t.TempDir(), t.TempDir()}, compare.Options{})
	var ie *compare.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "is not a run folder") {
		t.Errorf("err = %v", err)
	}
	if got := (&compare.Result{}).Written("o"); got != "\nwritten: o/{compare.html,compare.png,compare.json}\n" {
		t.Errorf("Written = %q", got)
	}
}

// TestCheckKinds: run folders mixed with sweep folders are refused before
// anything is read, as an input error naming how many are sweeps; either
// kind alone passes.
func TestCheckKinds(t *testing.T) {
	t.Parallel()
	sweep, runDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(sweep, capacity.ManifestFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := compare.CheckKinds([]string{runDir, sweep, runDir})
	var ie *compare.InputError
	if !errors.As(err, &ie) || err.Error() != "compare: give run folders or sweep folders, not both (1 of 3 are sweeps)" {
		t.Errorf("mixed: %v", err)
	}
	if err := compare.CheckKinds([]string{sweep, sweep}); err != nil {
		t.Errorf("sweeps: %v", err)
	}
	if err := compare.CheckKinds([]string{runDir, runDir}); err != nil {
		t.Errorf("runs: %v", err)
	}
}
