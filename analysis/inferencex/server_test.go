package inferencex

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/server/servermetrics"
)

func writeExport(t *testing.T, dir string, ms map[string]*servermetrics.Metric) {
	t.Helper()
	b, err := json.Marshal(&servermetrics.Export{SchemaVersion: "1.0", Metrics: ms, WarmupMetrics: map[string]*servermetrics.Metric{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, servermetrics.JSONFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func ctr(labels map[string]string, total float64) *servermetrics.Series {
	return &servermetrics.Series{Labels: labels, Stats: &servermetrics.Stats{Total: f64(total)}}
}

func gge(labels map[string]string, max float64) *servermetrics.Series {
	return &servermetrics.Series{Labels: labels, Stats: &servermetrics.Stats{Max: f64(max), Avg: f64(max)}}
}

// TestSGLangServerMetrics: SGLang's cached-token counters by source, its
// token-usage gauge, the host tier and the KV pool from
// max_total_num_tokens summed over DP ranks.
func TestSGLangServerMetrics(t *testing.T) {
	t.Parallel()
	dir := copyFixture(t)
	writeExport(t, dir, map[string]*servermetrics.Metric{
		"sglang:prompt_tokens":     {Type: "counter", Series: []*servermetrics.Series{ctr(nil, 1000)}},
		"sglang:generation_tokens": {Type: "counter", Series: []*servermetrics.Series{ctr(nil, 200)}},
		"sglang:cached_tokens": {Type: "counter", Series: []*servermetrics.Series{
			ctr(map[string]string{"cache_source": "device"}, 400), ctr(map[string]string{"cache_source": "host"}, 100)}},
		"sglang:token_usage":               {Type: "gauge", Series: []*servermetrics.Series{gge(nil, 75)}}, // percent: read as 0.75
		"sglang:hicache_host_used_tokens":  {Type: "gauge", Series: []*servermetrics.Series{gge(nil, 300)}},
		"sglang:hicache_host_total_tokens": {Type: "gauge", Series: []*servermetrics.Series{gge(nil, 1000)}},
		"sglang:realtime_tokens":           {Type: "counter", Series: []*servermetrics.Series{ctr(map[string]string{"mode": "prefill_compute"}, 500)}},
		"sglang:max_total_num_tokens": {Type: "gauge", Series: []*servermetrics.Series{
			gge(map[string]string{"dp_rank": "0"}, 1000), gge(map[string]string{"dp_rank": "1"}, 1200)}},
	})
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := LoadEnv(MapLookup(map[string]string{"FRAMEWORK": "sglang", "TP": "4", "CONC": "8", "KV_OFFLOADING": "none"}))
	res, err := run.InferenceX(Options{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	doc := decodeResult(t, res)
	sm := dig(t, doc, "server_metrics").(map[string]any)
	for _, c := range []struct {
		path []string
		want any
	}{
		{[]string{"adapter"}, "sglang"},
		{[]string{"cache", "gpu_cache_hit_rate"}, 0.4}, {[]string{"cache", "cpu_cache_hit_rate"}, 0.1},
		{[]string{"cache", "external_cache_hit_rate"}, 0.1}, {[]string{"cache", "overall_cache_hit_rate"}, 0.5},
		{[]string{"kv_cache", "gpu_usage_pct"}, 0.75}, {[]string{"kv_cache", "cpu_usage_pct"}, 0.3},
		{[]string{"kv_cache", "gpu_total_tokens"}, 2200.0},
		{[]string{"tokens", "prompt_total"}, 1000.0}, {[]string{"tokens", "prompt_by_source", "computed"}, 500.0},
	} {
		if got := dig(t, sm, c.path...); got != c.want {
			t.Errorf("server_metrics.%v = %v, want %v", c.path, got, c.want)
		}
	}
	if got := dig(t, doc, "kv_cache_pool_tokens"); got != 2200.0 {
		t.Errorf("kv_cache_pool_tokens = %v", got)
	}
}

// TestMissingAndUnknownServerMetrics: without an export the server block
// says so and the token totals fall back to the records; an export of an
// unknown backend is a warning, not a crash.
func TestMissingAndUnknownServerMetrics(t *testing.T) {
	t.Parallel()
	dir := copyFixture(t)
	os.Remove(filepath.Join(dir, servermetrics.JSONFile))
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := LoadEnv(MapLookup(fixtureEnv))
	res, _ := run.InferenceX(Options{Env: env})
	doc := decodeResult(t, res)
	if dig(t, doc, "server_metrics", "present") != false || dig(t, doc, "server_metrics", "adapter") != "none" ||
		dig(t, doc, "server_metrics", "tokens", "prompt_total") != 10000.0 || dig(t, doc, "server_metrics", "tokens", "generation_total") != 274.0 ||
		doc["kv_cache_pool_tokens"] != nil {
		t.Errorf("server block without an export: %v", doc["server_metrics"])
	}
	// TGI is not in the engines table (TensorRT-LLM's trtllm_ names,
	// the example here before, now are).
	writeExport(t, dir, map[string]*servermetrics.Metric{"tgi_request_input_length": {Type: "counter", Series: []*servermetrics.Series{ctr(nil, 5)}}})
	run, _ = Load(dir)
	res, err = run.InferenceX(Options{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if doc := decodeResult(t, res); dig(t, doc, "server_metrics", "adapter") != "unknown" || !slices.ContainsFunc(res.Warnings, func(w string) bool {
		return strings.Contains(w, "server engine unknown (1 metric families: tgi_request_input_length)")
	}) {
		t.Errorf("unknown backend: adapter %v, warnings %q", dig(t, doc, "server_metrics", "adapter"), res.Warnings)
	}
}

// TestEnvErrors: settings InferenceX rejects are errors naming the variable.
func TestEnvErrors(t *testing.T) {
	t.Parallel()
	run, err := Load(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []map[string]string{
		{"KV_OFFLOADING": "dram"}, // no backend
		{"KV_OFFLOADING": "none", "KV_OFFLOAD_BACKEND": "lmcache"},
		{"KV_OFFLOADING": "dram", "KV_OFFLOAD_BACKEND": "lmcache", "KV_OFFLOAD_BACKEND_METADATA": `{"name":"mooncake"}`},
		{"KV_OFFLOADING": "none", "ROUTER_METADATA": `{"version":"1"}`},
	} {
		env, err := LoadEnv(MapLookup(c))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.InferenceX(Options{Env: env}); err == nil {
			t.Errorf("%v accepted", c)
		}
	}
	for _, c := range []map[string]string{{"TP": "four"}, {"PP_SIZE": "0"}, {"IS_MULTINODE": "true", "PREFILL_HARDWARE": "b200"}} {
		if _, err := LoadEnv(MapLookup(c)); err == nil {
			t.Errorf("LoadEnv(%v) accepted", c)
		}
	}
}

// TestEnvTP: TP as a label is a positive integer or nothing (0), where
// LoadEnv refuses what is not one.
func TestEnvTP(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]int{"8": 8, "1": 1, "": 0, "0": 0, "-2": 0, "four": 0} {
		if got := EnvTP(MapLookup(map[string]string{"TP": v})); got != want {
			t.Errorf("EnvTP(TP=%q) = %d, want %d", v, got, want)
		}
	}
	if got := EnvTP(MapLookup(nil)); got != 0 {
		t.Errorf("EnvTP(TP unset) = %d, want 0", got)
	}
}

// TestMultinodeShape: prefill + decode workers give tp, ep and the GPU
// count that divides the per-GPU throughput.
func TestMultinodeShape(t *testing.T) {
	t.Parallel()
	e, err := LoadEnv(MapLookup(map[string]string{"IS_MULTINODE": "true", "PREFILL_NUM_WORKERS": "1", "PREFILL_TP": "8",
		"PREFILL_PP_SIZE": "2", "PREFILL_PCP_SIZE": "2", "PREFILL_EP": "8", "DECODE_NUM_WORKERS": "2", "DECODE_TP": "8",
		"DECODE_PP_SIZE": "2", "DECODE_DCP_SIZE": "4", "DECODE_EP": "16", "DECODE_DP_ATTN": "true",
		"PREFILL_HARDWARE": "b200", "DECODE_HARDWARE": "h100"}))
	if err != nil {
		t.Fatal(err)
	}
	f, gpus, tp, ep, dpa := e.gpuShape(true)
	if gpus != 64 || tp != 16 || ep != 16 || dpa != "true" {
		t.Errorf("gpus %d tp %d ep %d dpa %s; want 64 16 16 true", gpus, tp, ep, dpa)
	}
	if v, _ := f.get("num_prefill_gpu"); v != 32 {
		t.Errorf("num_prefill_gpu %v", v)
	}
	if v, _ := f.get("decode_hw"); v != "h100" {
		t.Errorf("decode_hw %v", v)
	}
}
