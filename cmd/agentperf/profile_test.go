package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/internal/testshared"
	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/sim"
)

// runCLI runs agentperf in-process and returns its exit code and output.
func runProfileCLI(ctx context.Context, t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runMain(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// clearAIPerfEnv unsets AIPERF_* variables of the test process so the
// tests see only what they set.
func clearAIPerfEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AIPERF_") || k == "OPENAI_API_KEY" {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	t.Setenv("AIPERF_DATASET_MMAP_CACHE_DIR", t.TempDir())
}

// readAggregate parses profile_export_aiperf.json.
func readAggregate(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "profile_export_aiperf.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("profile_export_aiperf.json: %v", err)
	}
	return m
}

// readRecords parses every line of a JSONL export.
func readRecords(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: line %d: %v", path, len(out)+1, err)
		}
		out = append(out, m)
	}
	return out
}

func num(m map[string]any, path ...string) float64 {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return -1
		}
		v = mm[p]
	}
	f, ok := v.(float64)
	if !ok {
		return -1
	}
	return f
}

// checkArtifacts checks that the artifact set is complete and that every
// request sent is in exactly one place.
func checkArtifacts(t *testing.T, dir string) map[string]any {
	t.Helper()
	for _, f := range []string{"profile_export.jsonl", "context_overflow_export.jsonl", "profile_export_aiperf.json", "profile_export_aiperf.csv", "logs/aiperf.log"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("artifact missing: %v", err)
		}
	}
	agg := readAggregate(t, dir)
	recs := readRecords(t, filepath.Join(dir, "profile_export.jsonl"))
	ovf := readRecords(t, filepath.Join(dir, "context_overflow_export.jsonl"))
	md, _ := agg["metadata"].(map[string]any)
	acct, _ := md["request_accounting"].(map[string]any)
	if acct == nil {
		t.Fatalf("metadata.request_accounting missing: %v", md)
	}
	sent := num(acct, "sent")
	if sent <= 0 || int(sent) != len(recs)+len(ovf) {
		t.Fatalf("accounting says %v sent; files hold %d records + %d overflows (%v)", sent, len(recs), len(ovf), acct)
	}
	return agg
}

func TestProfileSimSyntheticEndToEnd(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	code, out, errOut := runProfileCLI(context.Background(), t, "profile",
		"--url", "sim://?zero-latency=true", "--public-dataset", "synthetic:traces=6",
		"--model", "demo", "--concurrency", "4", "--benchmark-duration", "2",
		"--streaming", "--use-server-token-count", "--trace-idle-gap-cap-seconds", "0.01",
		"--slice-duration", "1", "--output-artifact-dir", dir, "--ui-type", "simple")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	agg := checkArtifacts(t, dir)
	if n := num(agg, "request_count", "avg"); n < 10 {
		t.Fatalf("request_count = %v, want a few dozen from 4 lanes in 2 s at zero latency", n)
	}
	for _, f := range []string{"metrics_plots.png", "server_metrics_export.json", "server_metrics_export.csv", "profile_export_aiperf_timeslices.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("artifact missing: %v", err)
		}
	}
	if !strings.Contains(out, "Time to First Token") || !strings.Contains(out, "requests: sent") {
		t.Fatalf("summary not printed:\n%s", out)
	}
	if !strings.Contains(errOut, "profiling") {
		t.Fatalf("no live progress lines on stderr:\n%s", errOut)
	}
}

// writeHFCache lays out a Hugging Face hub cache holding a corpus for repo
// and returns the cache root.
func writeHFCache(t *testing.T, repo string, traces []dataset.Trace) string {
	t.Helper()
	root := t.TempDir()
	org, name, _ := strings.Cut(repo, "/")
	base := filepath.Join(root, "datasets--"+org+"--"+name)
	sha := strings.Repeat("ab", 20)
	snap := filepath.Join(base, "snapshots", sha)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(base, "refs"), 0o755)
	if err := os.WriteFile(filepath.Join(base, "refs", "main"), []byte(sha), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(snap, "traces.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := dataset.WriteJSONL(f, traces); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return root
}

func startSim(t *testing.T, model string) *sim.Server {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Model = model
	cfg.ZeroLatency = true
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// TestProfileInferenceXArgv runs the exact argument lists InferenceX's
// build_replay_cmd emits at v0.2, v0.3 and HEAD, with a short duration and
// therefore --unsafe-override, as InferenceX adds it below 900 s.
func TestProfileInferenceXArgv(t *testing.T) {
	testshared.SkipIfShort(t, "several runs of InferenceX command lines")
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 3, Traces: 8, MinTurns: 4, MaxTurns: 10, TimeScale: 0.001})
	srv := startSim(t, "served-model")
	cases := []struct {
		name     string
		repo     string
		env      map[string]string
		argv     func(out string) []string
		wantCode int
		wantErr  []string
	}{
		{
			name: "v0.2", repo: "semianalysisai/cc-traces-weka-no-subagents-051226",
			env: map[string]string{envGeneration: "v0.2", "AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES": "1", "AIPERF_DATASET_CONFIGURATION_TIMEOUT": "1800", "AIPERF_SERVICE_PROFILE_CONFIGURE_TIMEOUT": "1800"},
			argv: func(out string) []string {
				return []string{"profile", "--scenario", "inferencex-agentx-mvp",
					"--url", srv.URL, "--endpoint", "/v1/chat/completions", "--endpoint-type", "chat", "--streaming",
					"--model", "served-model", "--concurrency", "3", "--benchmark-duration", "2", "--random-seed", "42",
					"--failed-request-threshold", "0.05",
					"--trajectory-start-min-ratio", "0.25", "--trajectory-start-max-ratio", "0.75",
					"--use-server-token-count", "--tokenizer-trust-remote-code",
					"--tokenizer", "builtin", // InferenceX's --model is a hub id whose tokenizer agentperf would download; "served-model" is none
					"--num-dataset-entries", "949", "--slice-duration", "1.0",
					"--output-artifact-dir", out, "--unsafe-override",
					"--public-dataset", "semianalysis_cc_traces_weka"}
			},
			wantCode: 0, // valid=false: unsafe_override (duration < 900 s); exit 0 as aiperf
		},
		{
			name: "v0.3", repo: "semianalysisai/cc-traces-weka-with-subagents-052726",
			env: map[string]string{envGeneration: "v0.3", "AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES": "0", "AIPERF_DATASET_CONFIGURATION_TIMEOUT": "1800", "AIPERF_SERVICE_PROFILE_CONFIGURE_TIMEOUT": "1800"},
			argv: func(out string) []string {
				return []string{"profile", "--scenario", "inferencex-agentx-mvp",
					"--url", srv.URL, "--endpoint", "/v1/chat/completions", "--endpoint-type", "chat", "--streaming",
					"--model", "served-model", "--concurrency", "3", "--benchmark-duration", "2", "--random-seed", "42",
					"--failed-request-threshold", "0.10",
					"--trajectory-start-min-ratio", "0.25", "--trajectory-start-max-ratio", "0.75",
					"--use-server-token-count", "--tokenizer-trust-remote-code",
					"--tokenizer", "builtin", // InferenceX's --model is a hub id whose tokenizer agentperf would download; "served-model" is none
					"--max-context-length", "131072",
					"--num-dataset-entries", "472", "--slice-duration", "1.0",
					"--server-metrics", srv.URL + "/metrics", srv.URL + "/metrics",
					"--output-artifact-dir", out, "--unsafe-override",
					"--public-dataset", "semianalysis_cc_traces_weka_with_subagents"}
			},
			wantCode: 0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clearAIPerfEnv(t)
			t.Setenv("HF_HUB_CACHE", writeHFCache(t, tc.repo, traces))
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			out := filepath.Join(t.TempDir(), "aiperf_artifacts")
			code, stdout, stderr := runProfileCLI(context.Background(), t, tc.argv(out)...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, stderr)
				}
			}
			if tc.wantCode == 2 {
				return
			}
			agg := checkArtifacts(t, out)
			md := agg["metadata"].(map[string]any)
			if md["scenario"] != "inferencex-agentx-mvp" || md["submission_valid"] != false {
				t.Fatalf("metadata = %v", md)
			}
			if r := fmt.Sprint(md["submission_invalid_reasons"]); !strings.Contains(r, "unsafe_override") {
				t.Fatalf("submission_invalid_reasons = %s", r)
			}
			ds, _ := md["dataset"].(map[string]any)
			if ds["source_type"] != "public_dataset" {
				t.Errorf("metadata.dataset.source_type = %v, want public_dataset (aiperf's value, copied by InferenceX)", ds["source_type"])
			}
			if ds["hf_dataset_name"] != tc.repo {
				t.Fatalf("metadata.dataset = %v, want hf_dataset_name %s", ds, tc.repo)
			}
			// Each generation's semantics were selected, and said so.
			if g := md["agentperf"].(map[string]any)["agentx_generation"]; g != tc.env[envGeneration] {
				t.Fatalf("metadata.agentx_generation = %v, want %s", g, tc.env[envGeneration])
			}
			if !strings.Contains(stderr, "replay semantics: AgentX "+tc.env[envGeneration]) {
				t.Errorf("the log does not name the semantics:\n%s", stderr)
			}
		})
	}
}

func TestProfileAbortsOnFailedRequestThreshold(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	code, out, errOut := runProfileCLI(context.Background(), t, "profile",
		"--url", "sim://?zero-latency=true&fault-500-rate=0.5", "--public-dataset", "synthetic:traces=6",
		"--model", "demo", "--concurrency", "2", "--benchmark-duration", "60",
		"--streaming", "--trace-idle-gap-cap-seconds", "0.001",
		"--warmup-grace-period", "30",
		"--failed-request-threshold", "0.1", "--output-artifact-dir", dir, "--ui-type", "none", "--no-plot")
	if code != 1 {
		// A warmup request can draw the fault too: that aborts with exit 1 as well.
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "aborted") {
		t.Fatalf("stderr does not say the run was aborted:\n%s", errOut)
	}
	agg := checkArtifacts(t, dir)
	md := agg["metadata"].(map[string]any)
	ap, _ := md["agentperf"].(map[string]any)
	if ap["aborted"] != "failed_request_threshold" || agg["was_cancelled"] != true {
		t.Fatalf("metadata = %v", md)
	}
}

func TestProfileInterruptWritesCancelledArtifacts(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	// Interrupt once the run has recorded requests (the records file
	// grows while it runs), not after a fixed time: on a loaded machine a
	// run can take more than a second to send its first request, and an
	// interrupt before it leaves nothing to check.
	go func() {
		defer cancel()
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if fi, err := os.Stat(filepath.Join(dir, "profile_export.jsonl.partial")); err == nil && fi.Size() > 0 {
				time.Sleep(200 * time.Millisecond)
				return
			}
		}
	}()
	code, out, errOut := runProfileCLI(ctx, t, "profile",
		"--url", "sim://?zero-latency=true", "--public-dataset", "synthetic:traces=6",
		"--model", "demo", "--concurrency", "3", "--benchmark-duration", "600",
		"--streaming", "--trace-idle-gap-cap-seconds", "0.01", "--benchmark-grace-period", "1",
		"--output-artifact-dir", dir, "--ui-type", "none", "--no-plot")
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitInterrupted, out, errOut)
	}
	agg := checkArtifacts(t, dir)
	if agg["was_cancelled"] != true {
		t.Fatalf("was_cancelled = %v", agg["was_cancelled"])
	}
}

func TestProfileNeverLeaksTheAPIKey(t *testing.T) {
	clearAIPerfEnv(t)
	const secret = "sk-test-0123456789SECRETKEY"
	t.Setenv("OPENAI_API_KEY", secret)
	dir := t.TempDir()
	code, out, errOut := runProfileCLI(context.Background(), t, "profile",
		"--url", "sim://?zero-latency=true&fault-500-every=7", "--public-dataset", "synthetic:traces=4",
		"--model", "demo", "--concurrency", "2", "--benchmark-duration", "1",
		"--streaming", "--trace-idle-gap-cap-seconds", "0.01",
		"--header", "X-Extra: 1", "--output-artifact-dir", dir, "--ui-type", "simple")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out, secret) || strings.Contains(errOut, secret) {
		t.Fatal("the API key was printed")
	}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s contains the API key", p)
		}
		return nil
	})
	agg := readAggregate(t, dir)
	if ic, _ := agg["input_config"].(map[string]any); ic == nil || ic["key_supplied"] != true {
		t.Fatalf("input_config does not record that a key was set: %v", agg["input_config"])
	}
}

func TestProfileUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		// Checked by the library (replay.Config.ValidateSettings) before
		// the corpus is loaded, in the CLI's terms.
		{"no url", nil, []string{"--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic"},
			"agentperf: --url required: the server's base URL, e.g. http://localhost:8000 (or sim:// for the in-process simulator)\n"},
		// Without --model the server is asked (/v1/models); one that does
		// not answer is a usage error that names the URL and --model.
		{"no model, server unreachable", nil, []string{"--url", "http://127.0.0.1:1", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic"},
			"agentperf: no --model given, so model discovery: GET http://127.0.0.1:1/v1/models: dial tcp 127.0.0.1:1: connect: connection refused; pass the model name explicitly (--model NAME)\n"},
		{"no model, no url", nil, []string{"--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic"},
			"agentperf: --model required: the name of the model the server serves (at least one)\n"},
		{"concurrency sweep", nil, []string{"--url", "sim://", "--model", "m", "--concurrency", "1,2", "--benchmark-duration", "1", "--public-dataset", "synthetic"}, "use 'agentperf sweep --concurrency 1,2'"},
		// Validated and then ignored before: every record was written.
		{"export level summary", nil, []string{"--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic", "--export-level", "summary"}, "--export-level summary is not supported: every run writes profile_export.jsonl"},
		// Each shard would start a simulator of its own.
		{"shards against sim", nil, []string{"--url", "sim://", "--model", "m", "--concurrency", "2", "--benchmark-duration", "1", "--public-dataset", "synthetic", "--shard", "0/2", "--shard-rendezvous", "127.0.0.1:1"},
			"every shard would run its own in-process simulator"},
		{"unknown flag", nil, []string{"--bogus"}, "unknown flag"},
		{"unsupported flag", nil, []string{"--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic", "--request-rate", "5"}, "--request-rate"},
		{"rejected env", map[string]string{"AIPERF_DATASET_WEKA_TOOL_SHAPED_MESSAGES": "true"}, []string{"--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic"}, "AIPERF_DATASET_WEKA_TOOL_SHAPED_MESSAGES"},
		{"scenario violations", nil, []string{"--scenario", "inferencex-agentx-mvp", "--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "60", "--public-dataset", "semianalysis_cc_traces_weka"}, "--unsafe-override"},
		{"stray argument", nil, []string{"--url", "sim://", "extra"}, "unexpected argument"},
		{"too many profile runs", nil, []string{"--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic", "--num-profile-runs", "11"}, "--num-profile-runs 11: want 1 to 10"},
		{"confidence without runs", nil, []string{"--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic", "--confidence-level", "0.9"}, "--num-profile-runs 2 or more"},
		// Ranges from the settings table (run.Range), in the unit of each.
		{"duration out of range", nil, []string{"--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "0", "--public-dataset", "synthetic"}, "--benchmark-duration 0: out of range: want seconds > 0 (the profiling window's length)"},
		{"ratio out of range", nil, []string{"--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic", "--trajectory-start-max-ratio", "1.5"}, "--trajectory-start-max-ratio 1.5: out of range: want 0 to 1 (a fraction of the trace's turns)"},
		{"entries out of range", nil, []string{"--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic", "--num-dataset-entries", "-1"}, "--num-dataset-entries -1: out of range: want traces ≥ 0 (0 = all)"},
		// Text settings (run.TextSettings), refused naming their flag.
		{"bad header", nil, []string{"--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic", "-H", "Authorization Bearer secret"}, `--header "Auth…": expected 'Name: value'`},
		{"bad metrics url", nil, []string{"--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic", "--server-metrics", "localhost:9090"}, `--server-metrics "localhost:9090": want an http(s)://host[:port]/metrics URL`},
		{"convergence threshold without runs", nil, []string{"--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic", "--convergence-threshold", "0.05"}, "--convergence-threshold applies to --num-profile-runs 2 or more"},
		{"warmup after first", nil, []string{"--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic", "--num-profile-runs", "2", "--profile-run-disable-warmup-after-first"}, "replays its warmup"},
		{"gpu telemetry on and off", nil, []string{"--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic", "--gpu-telemetry", "--no-gpu-telemetry"}, "contradict"},
		{"gpu telemetry from the driver", nil, []string{"--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic", "--gpu-telemetry", "pynvml"}, "give its URL"},
		{"bad gpu telemetry variable", map[string]string{"AIPERF_GPU_TELEMETRY_URL": "ftp://x"}, []string{"--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic"}, "AIPERF_GPU_TELEMETRY_URL"},
		{"bad sim url", nil, []string{"--url", "sim://?no-such-knob=1", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic"}, "no-such-knob"},
		// Checked by the library (replay.Config.ValidateSettings) before
		// the corpus is loaded, in the CLI's terms.
		{"no duration", nil, []string{"--url", "sim://", "--model", "m", "--concurrency", "1", "--public-dataset", "synthetic"}, "agentperf: --benchmark-duration required (the length of the profiling phase)\n"},
		{"bad url", nil, []string{"--url", "localhost:8000", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1", "--public-dataset", "synthetic"},
			`agentperf: --url "localhost:8000" must be http(s)://host[:port] (e.g. http://localhost:8000) (or sim:// for the in-process simulator)` + "\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clearAIPerfEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := append([]string{"profile", "--output-artifact-dir", t.TempDir()}, tc.args...)
			code, _, errOut := runProfileCLI(context.Background(), t, args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Fatalf("stderr does not mention %q:\n%s", tc.want, errOut)
			}
		})
	}
}

// TestOverflowRateLimitZeroMeansNone: AIPERF_AGENTX_CONTEXT_OVERFLOW_RATE_LIMIT=0
// allows no overflow at all (an explicit 0 is not the default).
func TestOverflowRateLimitZeroMeansNone(t *testing.T) {
	env := map[string]string{"AIPERF_AGENTX_CONTEXT_OVERFLOW_RATE_LIMIT": "0"}
	s, err := run.ReadEnvironment([]string{"AIPERF_AGENTX_CONTEXT_OVERFLOW_RATE_LIMIT=0"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	v := scenario.Judge(scenario.JudgeInput{Overflows: 1, Responses: 1000, Completed: 999, OverflowRateLimit: s.OverflowRateLimit})
	if v.Valid {
		t.Fatal("one overflow in 1000 passed a limit of 0")
	}
	v = scenario.Judge(scenario.JudgeInput{Overflows: 0, Responses: 1000, Completed: 1000, OverflowRateLimit: s.OverflowRateLimit})
	if !v.Valid {
		t.Fatalf("no overflow failed a limit of 0: %v", v.Reasons)
	}
	// Unset: the 1 % default.
	s, err = run.ReadEnvironment(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if v := scenario.Judge(scenario.JudgeInput{Overflows: 1, Responses: 100, Completed: 99, OverflowRateLimit: s.OverflowRateLimit}); !v.Valid {
		t.Fatalf("1 %% overflows failed the default limit: %v", v.Reasons)
	}
	if _, err := run.ReadEnvironment([]string{"AIPERF_SERVER_METRICS_COLLECTION_INTERVAL=-1"}, func(k string) string {
		if k == "AIPERF_SERVER_METRICS_COLLECTION_INTERVAL" {
			return "-1"
		}
		return ""
	}); err == nil {
		t.Fatal("a negative scrape interval was accepted")
	}
}
