package inferencex

import (
	"os"
	"strings"
	"testing"
)

// fieldUnit is one field of a result schema and its unit, as documented
// in docs/report-inferencex.md. A path ending in ".*" is a distribution
// block {mean, p50, p75, p90, p95, std} (v2: the keys mean_X … std_X).
type fieldUnit struct{ path, unit string }

// v3Fields is every field of InferenceX's nested result (v1.0 and later).
var v3Fields = []fieldUnit{
	{"hw", "string"}, {"conc", "requests in flight"}, {"image", "string"}, {"recipe_fingerprint", "string"},
	{"model", "string"}, {"infmax_model_prefix", "string"}, {"framework", "string"}, {"precision", "string"},
	{"spec_decoding", "string"}, {"disagg", "bool"}, {"scenario_type", "string"}, {"is_multinode", "bool"},
	{"tp", "GPUs"}, {"ep", "GPUs"}, {"dp_attention", "string"}, {"pp", "GPUs"}, {"dcp_size", "GPUs"}, {"pcp_size", "GPUs"},
	{"kv_offloading", "string"}, {"kv_offload_backend", "object"}, {"allocated_cpu_dram_gb", "GB"},
	{"num_requests_total", "records"}, {"num_requests_successful", "records"},
	{"request_accounting.records_total", "records"}, {"request_accounting.records_profiled", "records"},
	{"request_accounting.records_dropped_total", "records"}, {"request_accounting.records_warmup_dropped", "records"},
	{"request_accounting.records_error_dropped", "records"}, {"request_accounting.error_categories", "records"},
	{"router", "object"}, {"kv_p2p_transfer", "string"}, {"dataset", "object"}, {"warnings", "list"},
	{"request_metrics.qps.window_seconds", "s"}, {"request_metrics.qps.samples", "windows"},
	{"request_metrics.qps.*", "requests/s"},
	{"request_metrics.latency.ttft.*", "s"}, {"request_metrics.latency.e2el.*", "s"},
	{"request_metrics.latency.itl.*", "s"}, {"request_metrics.latency.tpot.*", "s"},
	{"request_metrics.latency.intvty.*", "tok/s/user"}, {"request_metrics.latency.e2e_norm_intvty.*", "tok/s/user"},
	{"request_metrics.latency.full_response_itl.*", "s"}, {"request_metrics.latency.full_response_intvty.*", "tok/s/user"},
	{"request_metrics.tokens.input.*", "tokens"}, {"request_metrics.tokens.output_actual.*", "tokens"},
	{"request_metrics.tokens.output_expected.*", "tokens"},
	{"request_metrics.throughput.input.tokens_per_second", "tok/s"},
	{"request_metrics.throughput.output.tokens_per_second", "tok/s"},
	{"request_metrics.throughput.total.tokens_per_second", "tok/s"},
	{"request_metrics.throughput.duration_seconds", "s"},
	{"request_metrics.throughput.per_gpu.total_tput_tps", "tok/s/GPU"},
	{"request_metrics.throughput.per_gpu.output_tput_tps", "tok/s/GPU"},
	{"request_metrics.throughput.per_gpu.input_tput_tps", "tok/s/GPU"},
	{"request_metrics.cache.theoretical_cache_hit_rate", "fraction"},
	{"server_metrics.present", "bool"}, {"server_metrics.adapter", "string"}, {"server_metrics.metric_count", "metrics"},
	{"server_metrics.cache.gpu_cache_hit_rate", "fraction"}, {"server_metrics.cache.cpu_cache_hit_rate", "fraction"},
	{"server_metrics.cache.external_cache_hit_rate", "fraction"}, {"server_metrics.cache.overall_cache_hit_rate", "fraction"},
	{"server_metrics.cache.prefix_cache_hits", "tokens"}, {"server_metrics.cache.prefix_cache_queries", "tokens"},
	{"server_metrics.cache.external_prefix_cache_hits", "tokens"}, {"server_metrics.cache.external_prefix_cache_queries", "tokens"},
	{"server_metrics.cache.cached_tokens_by_source", "tokens"}, {"server_metrics.cache.frontend_cache_hit_rate", "fraction"},
	{"server_metrics.cache.router_kv_hit_rate", "fraction"}, {"server_metrics.cache.router_shared_cache_hit_rate", "fraction"},
	{"server_metrics.cache.frontend_cached_tokens", "tokens"}, {"server_metrics.cache.frontend_input_tokens", "tokens"},
	{"server_metrics.kv_cache.gpu_usage_pct", "fraction"}, {"server_metrics.kv_cache.gpu_total_tokens", "tokens"},
	{"server_metrics.kv_cache.cpu_usage_pct", "fraction"}, {"server_metrics.kv_cache.cpu_used_tokens", "tokens"},
	{"server_metrics.kv_cache.cpu_total_tokens", "tokens"},
	{"server_metrics.kv_offload.bytes_gpu_to_cpu", "bytes"}, {"server_metrics.kv_offload.bytes_cpu_to_gpu", "bytes"},
	{"server_metrics.kv_offload.time_gpu_to_cpu", "s"}, {"server_metrics.kv_offload.time_cpu_to_gpu", "s"},
	{"server_metrics.kv_offload.bandwidth_gpu_to_cpu_bytes_per_second", "bytes/s"},
	{"server_metrics.kv_offload.bandwidth_cpu_to_gpu_bytes_per_second", "bytes/s"},
	{"server_metrics.tokens.prompt_total", "tokens"}, {"server_metrics.tokens.generation_total", "tokens"},
	{"server_metrics.tokens.requests_completed", "requests"},
	{"server_metrics.tokens.prompt_by_source.gpu_cache_hit", "tokens"},
	{"server_metrics.tokens.prompt_by_source.cpu_or_external_cache_hit", "tokens"},
	{"server_metrics.tokens.prompt_by_source.computed", "tokens"}, {"server_metrics.tokens.prompt_by_source.raw", "tokens"},
	{"server_metrics.sources", "list"},
	{"kv_cache_pool_tokens", "tokens"},
}

// v2Fields is every field of the flat result (v0.1–v0.3). Distribution
// fields ("X.*") are mean_X, p75_X, p90_X, p95_X and std_X.
var v2Fields = []fieldUnit{
	{"hw", "string"}, {"conc", "requests in flight"}, {"image", "string"}, {"model", "string"},
	{"infmax_model_prefix", "string"}, {"framework", "string"}, {"precision", "string"}, {"spec_decoding", "string"},
	{"disagg", "bool"}, {"scenario_type", "string"}, {"is_multinode", "bool"}, {"tp", "GPUs"}, {"ep", "GPUs"},
	{"dp_attention", "string"}, {"offloading", "string"}, {"num_requests_total", "records"},
	{"num_requests_successful", "records"},
	{"qps.*", "requests/s"}, {"ttft.*", "s"}, {"e2el.*", "s"}, {"itl.*", "s"}, {"tpot.*", "s"},
	{"intvty.*", "tok/s/user"}, {"input_tokens.*", "tokens"}, {"output_tokens_actual.*", "tokens"},
	{"output_tokens_expected.*", "tokens"},
	{"theoretical_cache_hit_rate", "fraction"}, {"server_gpu_cache_hit_rate", "fraction"},
	{"server_cpu_cache_hit_rate", "fraction"}, {"kv_offload_bytes_gpu_to_cpu", "bytes"},
	{"kv_offload_bytes_cpu_to_gpu", "bytes"}, {"kv_offload_time_gpu_to_cpu", "s"}, {"kv_offload_time_cpu_to_gpu", "s"},
	{"cpu_kv_cache_usage_pct", "fraction"}, {"total_prompt_tokens", "tokens"}, {"total_generation_tokens", "tokens"},
	{"total_requests_completed", "requests"}, {"response_cache_hit_rate", "fraction"},
	{"input_tput_tps", "tok/s"}, {"output_tput_tps", "tok/s"}, {"total_tput_tps", "tok/s"},
	{"duration_seconds", "s"}, {"tput_per_gpu", "tok/s/GPU"}, {"output_tput_per_gpu", "tok/s/GPU"},
	{"input_tput_per_gpu", "tok/s/GPU"}, {"kv_cache_pool_tokens", "tokens"}, {"warnings", "list"},
}

var distKeysV3 = []string{"mean", "p50", "p75", "p90", "p95", "std"}
var distKeysV2 = []string{"mean", "p75", "p90", "p95", "std"}

// presentV3 reports whether path exists in doc (stat blocks: all six keys).
func presentV3(doc map[string]any, path string) (bool, string) {
	parts := strings.Split(path, ".")
	var v any = doc
	for i, p := range parts {
		if p == "*" {
			o, ok := v.(map[string]any)
			if !ok {
				return false, strings.Join(parts[:i], ".") + " is not an object"
			}
			for _, k := range distKeysV3 {
				if _, ok := o[k]; !ok {
					return false, "no " + k
				}
			}
			return true, ""
		}
		o, ok := v.(map[string]any)
		if !ok {
			return false, strings.Join(parts[:i], ".") + " is not an object"
		}
		if v, ok = o[p]; !ok {
			return false, "missing"
		}
	}
	return true, ""
}

// TestEveryContractFieldPresent: on the fixture (with a router and a P2P
// transfer configured, the optional fields) every field of both schemas
// is in the result.
func TestEveryContractFieldPresent(t *testing.T) {
	t.Parallel()
	env := map[string]string{}
	for k, v := range fixtureEnv {
		env[k] = v
	}
	env["ROUTER_METADATA"] = `{"name":"vllm-router","version":"0.1.14"}`
	env["KV_P2P_TRANSFER"] = "mooncake"
	run, err := Load(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := LoadEnv(MapLookup(env))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Schema{SchemaV3, SchemaV2} {
		res, err := run.InferenceX(Options{Schema: s, Env: e})
		if err != nil {
			t.Fatal(err)
		}
		doc := decodeResult(t, res)
		// warnings is written only when there is one: none here, where
		// every setting is given; one when CONC is missing.
		if _, ok := doc["warnings"]; ok {
			t.Errorf("%s: warnings %v on a fully described run", s, doc["warnings"])
		}
		noConc, _ := LoadEnv(func(n string) (string, bool) {
			v, ok := env[n]
			return v, ok && n != "CONC"
		})
		wres, err := run.InferenceX(Options{Schema: s, Env: noConc})
		if err != nil {
			t.Fatal(err)
		}
		wdoc := decodeResult(t, wres)
		if w, _ := wdoc["warnings"].([]any); len(w) != 1 || !strings.Contains(w[0].(string), "CONC not set") || wdoc["conc"] != 8.0 {
			t.Errorf("%s without CONC: conc %v, warnings %v", s, wdoc["conc"], wdoc["warnings"])
		}
		doc["warnings"] = wdoc["warnings"]
		if s == SchemaV3 {
			for _, f := range v3Fields {
				if ok, why := presentV3(doc, f.path); !ok {
					t.Errorf("v3 %s (%s): %s", f.path, f.unit, why)
				}
			}
			if rm := dig(t, doc, "router").(map[string]any); rm["name"] != "vllm-router" || rm["version"] != "0.1.14" {
				t.Errorf("router = %v", rm)
			}
			continue
		}
		for _, f := range v2Fields {
			if name, ok := strings.CutSuffix(f.path, ".*"); ok {
				for _, k := range distKeysV2 {
					if _, ok := doc[k+"_"+name]; !ok {
						t.Errorf("v2 %s_%s (%s) missing", k, name, f.unit)
					}
				}
				continue
			}
			if _, ok := doc[f.path]; !ok {
				t.Errorf("v2 %s (%s) missing", f.path, f.unit)
			}
		}
	}
}

// TestDocsListEveryField: docs/report-inferencex.md has a table row for
// every field, with its unit.
func TestDocsListEveryField(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/report-inferencex.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	v3, v2, ok := strings.Cut(doc, "## The flat v2 schema")
	if !ok {
		t.Fatal(`docs/report-inferencex.md has no "## The flat v2 schema" section`)
	}
	check := func(section, name string, fs []fieldUnit) {
		for _, f := range fs {
			found := false
			for _, line := range strings.Split(section, "\n") {
				if strings.Contains(line, "`"+f.path+"`") && strings.Contains(line, "| "+f.unit+" |") {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s section: no table row for `%s` with unit %q", name, f.path, f.unit)
			}
		}
	}
	check(v3, "v3", v3Fields)
	check(v2, "v2", v2Fields)
}
