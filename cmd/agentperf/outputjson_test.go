package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestProfileOutputJSON: with --output json, stdout is one JSON object
// for scripts (the exit code, validity, problems, warnings and the
// aggregate as written) and nothing else; the text summary goes to
// stderr. A run that fails its threshold says so in it too.
func TestProfileOutputJSON(t *testing.T) {
	clearAIPerfEnv(t)
	type summary struct {
		ArtifactDir     string `json:"artifact_dir"`
		ExitCode        int    `json:"exit_code"`
		SubmissionValid bool   `json:"submission_valid"`
		Problems        []struct {
			Reason, Message string
			Fatal           bool
		} `json:"problems"`
		Aggregate struct {
			RequestCount struct {
				Avg float64 `json:"avg"`
			} `json:"request_count"`
			InputConfig map[string]any `json:"input_config"`
		} `json:"aggregate"`
	}
	dir := t.TempDir()
	args := append([]string{"profile", "--url", "sim://?zero-latency=true", "--public-dataset", "synthetic:traces=6", "--output", "json"}, fastRunArgs(dir)...)
	code, stdout, stderr := runProfileCLI(context.Background(), t, args...)
	var s summary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("stdout is not one JSON object (%v):\n%s", err, stdout)
	}
	if code != exitOK || s.ExitCode != code || s.ArtifactDir != dir || s.Aggregate.RequestCount.Avg < 1 || s.Aggregate.InputConfig["concurrency"] != float64(2) {
		t.Errorf("exit %d; summary %+v", code, s)
	}
	if !strings.Contains(stderr, "agentperf summary") {
		t.Errorf("the text summary is not on stderr:\n%s", stderr)
	}

	// A run that ends above its failed-request threshold.
	dir2 := t.TempDir()
	args2 := append([]string{"profile", "--url", "sim://?decode-base-ms=4&prefill-tokens-per-sec=1e6&fault-500-every=3&fault-after-requests=2",
		"--public-dataset", "synthetic:traces=8", "--output", "json"}, fastRunArgs(dir2)...)
	args2 = append(args2, "--benchmark-duration", "2", "--failed-request-threshold", "0.1")
	code, stdout, _ = runProfileCLI(context.Background(), t, args2...)
	s = summary{}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("stdout is not one JSON object (%v):\n%s", err, stdout)
	}
	if code != exitRunFailed || s.ExitCode != exitRunFailed || len(s.Problems) == 0 || s.Problems[0].Reason != "failed_request_threshold_exceeded" || !s.Problems[0].Fatal {
		t.Errorf("exit %d; summary %+v", code, s)
	}
	var out, errb strings.Builder
	if c := runMain(context.Background(), append([]string{"profile", "--url", "sim://", "--public-dataset", "synthetic", "--output", "yaml"}, fastRunArgs(t.TempDir())...), &out, &errb); c != exitUsage || !strings.Contains(errb.String(), `--output "yaml": text or json`) {
		t.Errorf("--output yaml: exit %d, %s", c, errb.String())
	}
}
