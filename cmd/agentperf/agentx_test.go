package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/internal/testshared"
)

// The corpus and the tokenizer of the agentx tests, as InferenceX names
// them: the 256k corpus of the 062126 family, and a model id whose
// tokenizer sits in the same hub cache.
const (
	agentxRepo      = "semianalysisai/cc-traces-weka-062126-256k"
	agentxAlias     = "semianalysis_cc_traces_weka_062126_256k"
	agentxTokenizer = "Qwen/Qwen3-0.6B"
)

// agentxHubCache lays out a Hugging Face hub cache holding a small
// synthetic corpus with subagents as agentxRepo and a tokenizer as
// agentxTokenizer, and returns its root.
func agentxHubCache(t *testing.T) string {
	t.Helper()
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 11, Traces: 8, Subagents: true, MinTurns: 6, MaxTurns: 16, TimeScale: 0.05, MaxContext: 24000})
	root := writeHFCache(t, agentxRepo, traces)
	tok := unzstd(t, testshared.Path(t, "tokenizers/qwen3.tokenizer.json.zst"))
	sha := strings.Repeat("cd", 20)
	repo := filepath.Join(root, "models--Qwen--Qwen3-0.6B")
	if err := os.MkdirAll(filepath.Join(repo, "snapshots", sha), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "snapshots", sha, "tokenizer.json"), tok, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(sha), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// inferenceXAgentXArgv is the argv InferenceX's current client
// (inferencex-e2e/infx/bench/agentic/replay.py, replay_argv) builds, at
// each of its two stored versions, without the executable: at 08297699 it
// passes the endpoint, the live threshold, the warmup requests, the trace
// idle cap and the warmup grace (their defaults from its environment:
// 0.10, 10, 300, 1800); at f4289c7f only what the agentx preset does not
// own. Both add --unsafe-override below 900 s.
func inferenceXAgentXArgv(version, url, out, dur string, conc int) []string {
	argv := []string{"profile", "--scenario", "agentx", "--url", url}
	if version == "08297699" {
		argv = append(argv, "--endpoint", "/v1/chat/completions")
	}
	argv = append(argv, "--model", "served-model", "--tokenizer", agentxTokenizer,
		"--concurrency", fmt.Sprint(conc), "--benchmark-duration", dur)
	if version == "08297699" {
		argv = append(argv, "--failed-request-threshold", "0.10", "--warmup-requests-per-lane", "10",
			"--trace-idle-gap-cap-seconds", "300", "--warmup-grace-period", "1800")
	}
	argv = append(argv, "--tokenizer-trust-remote-code",
		"--server-metrics", url+"/metrics",
		"--output-artifact-dir", out)
	if d, _ := time.ParseDuration(dur + "s"); d < 900*time.Second {
		argv = append(argv, "--unsafe-override")
	}
	return append(argv, "--public-dataset", agentxAlias)
}

// TestProfileInferenceXAgentXArgv runs both stored versions of the argv
// InferenceX builds today, verbatim, at 60 s (so with --unsafe-override,
// as InferenceX adds it) against the simulator, on a corpus read from a
// hub cache: the run exits 0, is scenario agentx, is not a valid
// submission for the one reason unsafe_override, and input_config holds
// the preset's defaults wherever the argv left a setting out.
func TestProfileInferenceXAgentXArgv(t *testing.T) {
	if testing.Short() {
		t.Skip("two 60 s runs")
	}
	hub := agentxHubCache(t)
	srv := startSim(t, "served-model")
	for _, version := range []string{"08297699", "f4289c7f"} {
		t.Run(version, func(t *testing.T) {
			clearAIPerfEnv(t)
			t.Setenv("HF_HUB_CACHE", hub)
			t.Setenv("HF_HUB_OFFLINE", "1")
			t.Setenv(envGeneration, "")
			os.Unsetenv(envGeneration)
			out := filepath.Join(t.TempDir(), "aiperf_artifacts")
			argv := inferenceXAgentXArgv(version, srv.URL, out, "60", 4)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			code, stdout, stderr := runProfileCLI(ctx, t, append(argv, "--ui-type", "none")...)
			if code != exitOK {
				t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			agg := checkArtifacts(t, out)
			md := agg["metadata"].(map[string]any)
			if md["scenario"] != "agentx" || md["submission_valid"] != false {
				t.Fatalf("scenario %v, submission_valid %v; want agentx, false", md["scenario"], md["submission_valid"])
			}
			if r := fmt.Sprint(md["submission_invalid_reasons"]); r != "[unsafe_override]" {
				t.Errorf("submission_invalid_reasons = %s, want [unsafe_override]", r)
			}
			ic := agg["input_config"].(map[string]any)
			want := map[string]any{
				"scenario": "agentx", "benchmark_duration": 60.0, "concurrency": 4.0,
				"endpoint": "/v1/chat/completions", "endpoint_type": "chat", "streaming": true,
				"stats_interval": 30.0, "random_seed": 42.0, "failed_request_threshold": 0.1,
				"warmup_requests_per_lane": 10.0, "warmup_grace_period": 1800.0, "trace_idle_gap_cap_seconds": 300.0,
				"use_server_token_count": true, "no_gpu_telemetry": true, "num_dataset_entries": 393.0, "slice_duration": 1.0,
				"trajectory_start_min_ratio": 0.25, "trajectory_start_max_ratio": 0.75,
				"system_idle_gap_cap_seconds": 10.0, "cache_bust": "first_turn_prefix", "ignore_eos": true,
				"agentx_generation": "v1.0", "unsafe_override": true, "tokenizer": agentxTokenizer,
			}
			for k, v := range want {
				if ic[k] != v {
					t.Errorf("input_config.%s = %v (%T), want %v", k, ic[k], ic[k], v)
				}
			}
			// The environment defaults were applied, and said so.
			for _, w := range []string{"AIPERF_HTTP_TCP_USER_TIMEOUT=900000 (environment default of scenario agentx)",
				"AIPERF_DATASET_CONFIGURATION_TIMEOUT=1800 (environment default of scenario agentx)"} {
				if !strings.Contains(stderr, w) {
					t.Errorf("the run log does not say %q", w)
				}
			}
			// It replays v1.0's rules (docs/replay.md, "v1.0 replay rules
			// and their sources"): spread primers, then the additive
			// per-lane cache warmup of 10, and profiling under the 10 s
			// system and 300 s per-tree idle caps.
			for _, w := range []string{"until it has sent 10 more requests",
				"profiling: system idle cap 10s:", "trace idle cap 5m0s:"} {
				if !strings.Contains(stderr, w) {
					t.Errorf("the run log does not say %q:\n%s", w, stderr)
				}
			}
			ds, _ := md["dataset"].(map[string]any)
			if ds["hf_dataset_name"] != agentxRepo {
				t.Errorf("metadata.dataset.hf_dataset_name = %v, want %s", ds["hf_dataset_name"], agentxRepo)
			}
			// A 60 s phase is below the scenario's 900 s: no coverage rule.
			if r, _ := md["submission_invalid_reasons"].([]any); slices.Contains(r, any("insufficient_profile_metric_coverage")) {
				t.Error("the coverage rule judged a 60 s smoke run")
			}
		})
	}
}
