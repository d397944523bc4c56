package sim

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape fetches and parses /metrics with the Prometheus text parser.
func scrape(t testing.TB, s *Server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type = %q", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// perEngine sums a counter or gauge family by engine label, optionally
// filtered by one more label.
func perEngine(t testing.TB, fams map[string]*dto.MetricFamily, name string, filter ...string) map[string]float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("metric %s missing", name)
	}
	out := map[string]float64{}
	for _, m := range f.GetMetric() {
		if len(filter) == 2 && label(m, filter[0]) != filter[1] {
			continue
		}
		if label(m, "model_name") != "agentperf-sim" {
			t.Errorf("%s: model_name = %q", name, label(m, "model_name"))
		}
		var v float64
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			v = m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			v = m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			v = float64(m.GetHistogram().GetSampleCount())
		}
		out[label(m, "engine")] += v
	}
	return out
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

func TestMetricsConsistentWithRequests(t *testing.T) {
	t.Parallel()
	for _, zl := range []bool{true, false} {
		t.Run(fmt.Sprintf("zero-latency=%v", zl), func(t *testing.T) {
			t.Parallel()
			cfg := fastTimed()
			cfg.ZeroLatency = zl
			cfg.Engines = 2
			cfg.OffloadCapacityTokens = 4096
			s := startSim(t, cfg)
			var prompt, completion, cached int
			sessions := 8
			for i := range sessions {
				for k := range 3 {
					body := mustDo(t, s, "/v1/chat/completions", chatReq{Messages: conversation(fmt.Sprintf("s%d", i), k), MaxTokens: 4 + k, IgnoreEOS: true, Stream: true}.withUsage(),
						map[string]string{"X-Correlation-ID": fmt.Sprintf("session-%d", i)})
					u := parseStream(t, body).usage
					prompt += u.PromptTokens
					completion += u.CompletionTokens
					cached += u.PromptTokensDetails.CachedTokens
				}
			}
			n := float64(sessions * 3)
			fams := scrape(t, s)
			for _, name := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "vllm:cpu_kv_cache_usage_perc"} {
				if fams[name].GetType() != dto.MetricType_GAUGE {
					t.Errorf("%s is %v, want gauge", name, fams[name].GetType())
				}
			}
			for _, name := range []string{"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds", "vllm:e2e_request_latency_seconds"} {
				if fams[name].GetType() != dto.MetricType_HISTOGRAM {
					t.Errorf("%s is %v, want histogram", name, fams[name].GetType())
				}
			}
			eq := func(what string, got, want float64) {
				t.Helper()
				if got != want {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			eq("prompt_tokens_total", sum(perEngine(t, fams, "vllm:prompt_tokens_total")), float64(prompt))
			eq("generation_tokens_total", sum(perEngine(t, fams, "vllm:generation_tokens_total")), float64(completion))
			eq("prefix_cache_queries_total", sum(perEngine(t, fams, "vllm:prefix_cache_queries_total")), float64(prompt))
			hits := sum(perEngine(t, fams, "vllm:prefix_cache_hits_total"))
			ext := sum(perEngine(t, fams, "vllm:external_prefix_cache_hits_total"))
			eq("prefix hits + external hits", hits+ext, float64(cached))
			eq("external_prefix_cache_queries_total", sum(perEngine(t, fams, "vllm:external_prefix_cache_queries_total")), float64(prompt)-hits)
			eq("by_source local_cache_hit", sum(perEngine(t, fams, "vllm:prompt_tokens_by_source_total", "source", "local_cache_hit")), hits)
			eq("by_source external_kv_transfer", sum(perEngine(t, fams, "vllm:prompt_tokens_by_source_total", "source", "external_kv_transfer")), ext)
			eq("by_source local_compute", sum(perEngine(t, fams, "vllm:prompt_tokens_by_source_total", "source", "local_compute")), float64(prompt)-hits-ext)
			eq("request_success_total{length}", sum(perEngine(t, fams, "vllm:request_success_total", "finished_reason", "length")), n)
			eq("request_success_total{stop}", sum(perEngine(t, fams, "vllm:request_success_total", "finished_reason", "stop")), 0)
			eq("ttft count", sum(perEngine(t, fams, "vllm:time_to_first_token_seconds")), n)
			eq("e2e count", sum(perEngine(t, fams, "vllm:e2e_request_latency_seconds")), n)
			eq("itl count", sum(perEngine(t, fams, "vllm:inter_token_latency_seconds")), float64(completion)-n)
			eq("running", sum(perEngine(t, fams, "vllm:num_requests_running")), 0)
			eq("preemptions", sum(perEngine(t, fams, "vllm:num_preemptions_total")), 0)
			if cached == 0 {
				t.Error("no cache hits across turns")
			}
			// Per-engine series: both engines served, and sessions stick to
			// one engine (hash routing), so every session's later turns hit.
			byEngine := perEngine(t, fams, "vllm:prompt_tokens_total")
			if len(byEngine) != 2 || byEngine["0"] == 0 || byEngine["1"] == 0 {
				t.Errorf("prompt tokens by engine = %v, want two engines with traffic", byEngine)
			}
			st := s.Stats()
			eq("Stats engines", float64(len(st.Engines)), 2)
			eq("Stats prompt tokens", float64(st.PromptTokens), float64(prompt))
			eq("Stats cached tokens", float64(st.CachedTokens), float64(cached))
			eq("Stats engine 0 prompt tokens", float64(st.Engines[0].PromptTokens), byEngine["0"])
			eq("Stats completed", float64(st.Completed), n)
		})
	}
}

func TestMetricsWithoutOffloadOmitExternal(t *testing.T) {
	t.Parallel()
	s := startSim(t, Config{ZeroLatency: true})
	fams := scrape(t, s)
	for _, name := range []string{"vllm:external_prefix_cache_queries_total", "vllm:cpu_kv_cache_usage_perc", "vllm:kv_offload_bytes_gpu_to_cpu_total"} {
		if _, ok := fams[name]; ok {
			t.Errorf("%s exported without an offload tier", name)
		}
	}
	cc := fams["vllm:cache_config_info"].GetMetric()
	if len(cc) != 1 || label(cc[0], "block_size") != "16" || label(cc[0], "num_gpu_blocks") != "21875" {
		t.Errorf("cache_config_info = %v", cc)
	}
	h := fams["vllm:time_to_first_token_seconds"].GetMetric()[0].GetHistogram()
	bk := h.GetBucket()
	if len(bk) != len(ttftBuckets)+1 || bk[0].GetUpperBound() != 0.001 || !math.IsInf(bk[len(bk)-1].GetUpperBound(), 1) {
		t.Errorf("TTFT histogram buckets = %v, want vLLM's %d bounds and +Inf", bk, len(ttftBuckets))
	}
}

func TestMetricsOffloadBytes(t *testing.T) {
	t.Parallel()
	s := startSim(t, Config{ZeroLatency: true, MaxModelLen: 1024, KVCapacityTokens: 1024 + 64, OffloadCapacityTokens: 8192, KVBytesPerToken: 1000})
	for _, tag := range []string{"A", "B", "C", "A"} {
		cachedOf(t, s, []msg{{"system", words(tag, 300)}}, nil)
	}
	fams := scrape(t, s)
	st := s.Stats()
	g2c := sum(perEngine(t, fams, "vllm:kv_offload_bytes_gpu_to_cpu_total"))
	c2g := sum(perEngine(t, fams, "vllm:kv_offload_bytes_cpu_to_gpu_total"))
	if g2c != float64(st.Evictions*16*1000) {
		t.Errorf("gpu_to_cpu bytes = %v, want evictions %d × 16 tokens × 1000 B", g2c, st.Evictions)
	}
	if c2g != float64(st.ExternalHits*1000) || c2g == 0 {
		t.Errorf("cpu_to_gpu bytes = %v, want external hits %d × 1000 B (> 0)", c2g, st.ExternalHits)
	}
	if u := sum(perEngine(t, fams, "vllm:cpu_kv_cache_usage_perc")); u <= 0 || u > 1 {
		t.Errorf("cpu_kv_cache_usage_perc = %v", u)
	}
}

// TestLazyMetricsAppearWhenUsed: with LazyMetrics a fresh server exposes
// no histogram series and no series with a per-value label; after one
// request with ignore_eos (finished_reason "length") those exist, and the
// unused label values still do not.
func TestLazyMetricsAppearWhenUsed(t *testing.T) {
	t.Parallel()
	cfg := fastTimed()
	cfg.LazyMetrics = true
	s := startSim(t, cfg)
	series := func(fams map[string]*dto.MetricFamily, name string) int {
		if f := fams[name]; f != nil {
			return len(f.GetMetric())
		}
		return 0
	}
	fresh := scrape(t, s)
	for _, name := range []string{"vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds", "vllm:request_success_total", "vllm:prompt_tokens_by_source_total"} {
		if n := series(fresh, name); n != 0 {
			t.Errorf("fresh lazy server exposes %d series of %s", n, name)
		}
	}
	if series(fresh, "vllm:num_requests_running") != 1 || series(fresh, "vllm:prompt_tokens_total") != 1 {
		t.Errorf("unlabelled gauges and counters must exist from the start")
	}
	mustDo(t, s, "/v1/chat/completions", chatReq{Model: "agentperf-sim", Messages: []msg{{"user", "hello there"}}, MaxCompletionTokens: 4, IgnoreEOS: true}, nil)
	used := scrape(t, s)
	if series(used, "vllm:time_to_first_token_seconds") != 1 || series(used, "vllm:e2e_request_latency_seconds") != 1 {
		t.Errorf("histograms missing after a request")
	}
	got := map[string]bool{}
	for _, m := range used["vllm:request_success_total"].GetMetric() {
		got[label(m, "finished_reason")] = true
	}
	if !got["length"] || got["stop"] || got["abort"] {
		t.Errorf("finished_reason series %v, want only length", got)
	}
	if series(used, "vllm:prompt_tokens_by_source_total") == 0 || series(used, "vllm:prompt_tokens_by_source_total") == 3 {
		t.Errorf("prompt_tokens_by_source: %d series, want only the used sources", series(used, "vllm:prompt_tokens_by_source_total"))
	}
}
