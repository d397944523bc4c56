package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
