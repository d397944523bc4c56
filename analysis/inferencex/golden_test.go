package inferencex

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// fixtureDir is a small synthetic artifact folder: eight records (four
// successful, one HTTP error, one cancelled, two warmup) and the server
// metrics of two engines (DP ranks) of one endpoint.
const fixtureDir = "testdata/two-engine"

// fixtureEnv is the InferenceX job environment of the golden results.
var fixtureEnv = map[string]string{
	"RUNNER_TYPE": "mi355x", "CONC": "8", "IMAGE": "vllm/vllm-openai:v0.21.0", "RECIPE_FINGERPRINT": "f00d",
	"MODEL": "amd/Kimi-K2.5-MXFP4", "MODEL_PREFIX": "kimik2.5", "FRAMEWORK": "vllm", "PRECISION": "fp4",
	"TP": "8", "EP_SIZE": "8", "DP_ATTENTION": "true", "KV_OFFLOADING": "dram", "KV_OFFLOAD_BACKEND": "lmcache",
	"KV_OFFLOAD_BACKEND_METADATA": `{"name":"lmcache","version":"0.3.9"}`, "TOTAL_CPU_DRAM_GB": "2500",
	"OFFLOADING": "cpu", "SPEC_DECODING": "none", "DISAGG": "false", "IS_MULTINODE": "false",
	"PP_SIZE": "1", "DCP_SIZE": "1", "PCP_SIZE": "1",
}

func fixtureResult(t *testing.T, schema Schema) (*Result, map[string]any) {
	t.Helper()
	run, err := Load(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	env, err := LoadEnv(MapLookup(fixtureEnv))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(fixtureDir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lg, err := ParseServerLog(f)
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.InferenceX(Options{Schema: schema, Env: env, ServerLogs: []*ServerLog{lg}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, buf.String())
	}
	return res, doc
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (check the diff, then go test -update):\n--- got\n%s", name, got)
	}
}

// TestGoldenInferenceX pins both schemas on the two-engine fixture.
func TestGoldenInferenceX(t *testing.T) {
	t.Parallel()
	for _, s := range []Schema{SchemaV3, SchemaV2} {
		res, _ := fixtureResult(t, s)
		var buf bytes.Buffer
		if err := res.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "two-engine."+string(s)+".json", buf.Bytes())
	}
}

// TestPercentGaugesAveragedAcrossEngines: the two engines report their KV
// usage (peaks 0.5 and 0.7) and CPU KV usage (0.5 each). Averaged, not
// summed (InferenceX v0.2 wrote 1.0 for two engines at 50 %), nor the
// hottest engine alone.
func TestPercentGaugesAveragedAcrossEngines(t *testing.T) {
	t.Parallel()
	_, v3 := fixtureResult(t, SchemaV3)
	kv := dig(t, v3, "server_metrics", "kv_cache").(map[string]any)
	if got := kv["gpu_usage_pct"]; got != 0.6 {
		t.Errorf("v3 gpu_usage_pct = %v, want 0.6 (mean of the engines' peaks 0.5 and 0.7; sum 1.2, max 0.7)", got)
	}
	if got := kv["cpu_usage_pct"]; got != 0.5 {
		t.Errorf("v3 cpu_usage_pct = %v, want 0.5", got)
	}
	_, v2 := fixtureResult(t, SchemaV2)
	if got := v2["cpu_kv_cache_usage_pct"]; got != 0.5 {
		t.Errorf("v2 cpu_kv_cache_usage_pct = %v, want 0.5 (two engines at 50 %%, not summed to 1.0)", got)
	}
	// Counters, by contrast, add up over engines.
	if got := dig(t, v3, "server_metrics", "cache", "prefix_cache_hits"); got != 800.0 {
		t.Errorf("prefix_cache_hits = %v, want 800 (300 + 500)", got)
	}
	// The seed table's KV figure: per slice the mean over engines
	// (0.25, 0.5, 0.6, 0.1), the last slice idle (no request running).
	run, err := Load(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	if d := run.Derived; !d.KVUsageMeanActiveValid || d.ActiveSlices != 3 || !near(d.KVUsageMeanActive, 0.45) {
		t.Errorf("KV usage over non-idle slices = %v over %d slices (valid %v), want 0.45 over 3", d.KVUsageMeanActive, d.ActiveSlices, d.KVUsageMeanActiveValid)
	}
}

func dig(t *testing.T, m map[string]any, path ...string) any {
	t.Helper()
	var v any = m
	for _, p := range path {
		o, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v: %q is not under an object", path, p)
		}
		if v, ok = o[p]; !ok {
			t.Fatalf("%v: no key %q", path, p)
		}
	}
	return v
}

func near(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1e-9*(1+abs(b))
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func decodeResult(t *testing.T, res *Result) map[string]any {
	t.Helper()
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}
