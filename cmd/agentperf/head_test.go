package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/dataset"
)

// headArgv is the command InferenceX's launcher builds today
// (build_replay_cmd), argument for argument, with a short duration (so
// the launcher adds --unsafe-override) and the sim's URL.
func headArgv(url, out string, conc int, dur string) []string {
	return []string{"profile", "--scenario", "inferencex-agentx-mvp",
		"--url", url, "--endpoint", "/v1/chat/completions", "--endpoint-type", "chat", "--streaming",
		"--model", "served-model", "--tokenizer", "builtin",
		"--concurrency", fmt.Sprint(conc), "--benchmark-duration", dur, "--stats-interval", "30", "--random-seed", "42",
		"--failed-request-threshold", "0.10",
		"--trajectory-start-min-ratio", "0.25", "--trajectory-start-max-ratio", "0.75",
		"--warmup-requests-per-lane", "10", "--trace-idle-gap-cap-seconds", "300",
		"--warmup-grace-period", "1800", "--use-server-token-count",
		"--no-gpu-telemetry", "--tokenizer-trust-remote-code",
		"--num-dataset-entries", "393", "--slice-duration", "1.0",
		"--server-metrics", url + "/metrics", url + "/metrics",
		"--output-artifact-dir", out, "--unsafe-override",
		"--public-dataset", "semianalysis_cc_traces_weka_062126_256k"}
}

// TestProfileInferenceXHEAD runs InferenceX's current command line
// unchanged (no generation selected: v1.0 is the default) against the
// simulator, on a corpus with subagents: the warmup is exactly the
// primers plus 10 requests per lane, profiling resumes every conversation
// from where the warmup left it (no turn sent twice, none skipped), the
// idle caps report their jumps, and the accounting adds up.
func TestProfileInferenceXHEAD(t *testing.T) {
	clearAIPerfEnv(t)
	t.Setenv(envGeneration, "")
	os.Unsetenv(envGeneration)
	t.Setenv("AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES", "0")
	t.Setenv("AIPERF_UI_REALTIME_METRICS_ENABLED", "true")
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 3, Traces: 8, Subagents: true, MinTurns: 6, MaxTurns: 14, TimeScale: 0.002})
	t.Setenv("HF_HUB_CACHE", writeHFCache(t, "semianalysisai/cc-traces-weka-062126-256k", traces))
	srv := startSim(t, "served-model")
	out := filepath.Join(t.TempDir(), "aiperf_artifacts")
	const lanes = 3
	code, stdout, stderr := runProfileCLI(context.Background(), t, headArgv(srv.URL, out, lanes, "4")...)
	// unsafe_override: valid=false, and exit 0 as the pinned aiperf, so
	// that the launcher's smoke runs pass (docs/artifacts.md, exit codes).
	if code != 0 {
		t.Fatalf("exit %d, want 0 (completed; not a valid submission: unsafe_override)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, w := range []string{"not a valid submission: unsafe_override", "exits 0 with submission_valid false"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not say %q:\n%s", w, stderr)
		}
	}
	if !strings.Contains(stdout, "submission NOT valid (unsafe_override)") {
		t.Errorf("the summary does not give the reason:\n%s", stdout)
	}
	agg := checkArtifacts(t, out)
	md := agg["metadata"].(map[string]any)
	ap := md["agentperf"].(map[string]any)
	if ap["agentx_generation"] != "v1.0" {
		t.Fatalf("generation %v, want the default v1.0", ap["agentx_generation"])
	}
	if cov, _ := md["metric_duration_coverage"].([]any); len(cov) != 1 || cov[0].(map[string]any)["phase_name"] != "profiling" || cov[0].(map[string]any)["required_ratio"] != 0.95 {
		t.Fatalf("metadata.metric_duration_coverage = %v", md["metric_duration_coverage"])
	}
	if r := fmt.Sprint(md["submission_invalid_reasons"]); r != "[unsafe_override]" {
		t.Fatalf("submission_invalid_reasons = %s, want only unsafe_override", r)
	}
	// The warmup: primers (one per live stream with history) + 3 × 10.
	recs := readRecords(t, filepath.Join(out, "profile_export.jsonl"))
	primers := 0
	for _, l := range strings.Split(stderr, "\n") {
		if i := strings.Index(l, "warmup: "); i >= 0 && strings.Contains(l, " primers done;") {
			fmt.Sscanf(l[i:], "warmup: %d primers done;", &primers)
		}
	}
	warm := 0
	for _, r := range recs {
		if r["metadata"].(map[string]any)["benchmark_phase"] == "warmup" {
			warm++
		}
	}
	ovf := readRecords(t, filepath.Join(out, "context_overflow_export.jsonl"))
	if warm+len(ovf) != primers+lanes*10 {
		t.Fatalf("%d warmup records (+%d overflows), want %d primers + %d lanes × 10", warm, len(ovf), primers, lanes)
	}
	// Every conversation's turns follow one another across the phases:
	// the primer (the turn before t*), the accelerated turns, then
	// profiling from the next one.
	type key struct{ tree, conv string }
	turns := map[key][]int{}
	type rec struct {
		start int64
		turn  int
	}
	byKey := map[key][]rec{}
	for _, r := range recs {
		m := r["metadata"].(map[string]any)
		k := key{fmt.Sprint(m["root_correlation_id"]), fmt.Sprint(m["conversation_id"])}
		byKey[k] = append(byKey[k], rec{int64(m["request_start_ns"].(float64)), int(m["turn_index"].(float64))})
	}
	for k, rs := range byKey {
		sort.Slice(rs, func(a, b int) bool { return rs[a].start < rs[b].start })
		for i, r := range rs {
			turns[k] = append(turns[k], r.turn)
			if i > 0 && r.turn != rs[i-1].turn+1 {
				t.Fatalf("conversation %s of tree %s: turns %v (a turn sent twice or skipped)", k.conv, k.tree, turns[k])
			}
		}
	}
	for _, w := range []string{"profiling resumes 3 lanes from their handed-off state", "system idle cap 10s:", "trace idle cap 5m0s:", "sample_time="} {
		if !strings.Contains(stderr, w) {
			t.Errorf("the log does not say %q:\n%s", w, stderr)
		}
	}
}
