package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/dataset"
)

// TestNoScenarioNoValidity: without --scenario a run is not judged as a
// submission: an overflow rate above 1 % is a warning that names the
// remedies on agentperf's side, the exit code stays 0, and
// profile_export_aiperf.json carries no submission_valid.
func TestNoScenarioNoValidity(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	code, out, errOut := runProfileCLI(context.Background(), t, "profile",
		"--url", "sim://?zero-latency=true&max-model-len=60000", "--public-dataset", "synthetic:traces=10",
		"--model", "demo", "--concurrency", "6", "--benchmark-duration", "1",
		"--streaming", "--use-server-token-count", "--trace-idle-gap-cap-seconds", "0.01", "--no-plot",
		"--output-artifact-dir", dir, "--ui-type", "none")
	if code != 0 {
		t.Fatalf("exit %d without --scenario, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(errOut, "not a valid submission") || strings.Contains(out, "submission") {
		t.Errorf("a run without --scenario was judged as a submission:\n%s\n%s", out, errOut)
	}
	warn := ""
	for _, l := range strings.Split(errOut, "\n") {
		if strings.Contains(l, "warning: context_overflow_rate_exceeded") {
			warn = l
		}
	}
	if warn == "" || !strings.Contains(warn, "--max-context-length") || !strings.Contains(warn, "sim://?max-model-len=") {
		t.Errorf("want one overflow warning naming --max-context-length and sim://?max-model-len=, got %q\nstderr:\n%s", warn, errOut)
	}
	if n := strings.Count(errOut, "context_overflow_rate_exceeded"); n != 1 {
		t.Errorf("the overflow warning is printed %d times, want once:\n%s", n, errOut)
	}
	agg := readAggregate(t, dir)
	md := agg["metadata"].(map[string]any)
	if _, ok := md["submission_valid"]; ok {
		t.Errorf("metadata.submission_valid written without --scenario: %v", md["submission_valid"])
	}
	ws, _ := md["warnings"].([]any)
	found := false
	for _, w := range ws {
		found = found || strings.Contains(w.(string), "context_overflow_rate_exceeded")
	}
	if !found {
		t.Errorf("metadata.warnings lacks the overflow warning: %v", ws)
	}
}

// TestRefusedRunLeavesNothing: a run refused at input validation (exit 2)
// creates no artifact folder and leaves no lock file in the dataset cache.
func TestRefusedRunLeavesNothing(t *testing.T) {
	base := []string{"profile", "--model", "demo", "--concurrency", "2", "--benchmark-duration", "5", "--ui-type", "none"}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"bad": 1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"malformed corpus", []string{"--url", "sim://", "--input-file", bad}},
		{"bad simulator setting", []string{"--url", "sim://?bogus=1", "--public-dataset", "synthetic:traces=4"}},
		{"missing tokenizer", []string{"--url", "sim://", "--public-dataset", "synthetic:traces=4", "--tokenizer", filepath.Join(t.TempDir(), "none.json")}},
		{"bad URL", []string{"--url", "ftp://x", "--public-dataset", "synthetic:traces=4"}},
		{"unsupported flag", []string{"--url", "sim://", "--public-dataset", "synthetic:traces=4", "--request-rate", "3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearAIPerfEnv(t)
			cache := t.TempDir()
			t.Setenv("AIPERF_DATASET_MMAP_CACHE_DIR", cache)
			out := filepath.Join(t.TempDir(), "art")
			code, _, errOut := runProfileCLI(context.Background(), t, append(append(append([]string(nil), base...), c.args...), "--output-artifact-dir", out)...)
			if code != exitUsage {
				t.Fatalf("exit %d, want 2\n%s", code, errOut)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("the refused run left %s behind (stat: %v)", out, err)
			}
			locks, _ := filepath.Glob(filepath.Join(cache, "*.lock"))
			if len(locks) > 0 {
				t.Errorf("stray lock files: %v", locks)
			}
		})
	}
}

// TestScenarioExitCodes: under --scenario the exit code follows the pinned
// aiperf. InferenceX's smoke run (its command line with a 60 s-style short
// duration and therefore --unsafe-override) completes, is not a valid
// submission (unsafe_override) and exits 0, so the launcher's
// PIPESTATUS check passes; --fail-on-invalid gives agentperf's strict rule
// (exit 1); the artifacts say submission_valid false with the reason in
// both cases.
func TestScenarioExitCodes(t *testing.T) {
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 3, Traces: 6, MinTurns: 4, MaxTurns: 8, TimeScale: 0.002})
	srv := startSim(t, "served-model")
	for _, tc := range []struct {
		name  string
		extra []string
		want  int
	}{
		{"smoke run, as the pin", nil, 0},
		{"--fail-on-invalid", []string{"--fail-on-invalid"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearAIPerfEnv(t)
			t.Setenv("HF_HUB_CACHE", writeHFCache(t, "semianalysisai/cc-traces-weka-062126-256k", traces))
			out := filepath.Join(t.TempDir(), "aiperf_artifacts")
			code, stdout, stderr := runProfileCLI(context.Background(), t, append(headArgv(srv.URL, out, 2, "2"), tc.extra...)...)
			if code != tc.want {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.want, stdout, stderr)
			}
			if !strings.Contains(stderr, "agentperf: not a valid submission: unsafe_override") {
				t.Errorf("stderr does not give the reason:\n%s", stderr)
			}
			md := checkArtifacts(t, out)["metadata"].(map[string]any)
			if md["submission_valid"] != false || !strings.Contains(fmt.Sprint(md["submission_invalid_reasons"]), "unsafe_override") {
				t.Errorf("submission_valid %v, reasons %v", md["submission_valid"], md["submission_invalid_reasons"])
			}
		})
	}
}
