package servermetrics

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestDeriveFallbackNames covers the engines and versions whose metric
// names differ from current vLLM: SGLang (cached_tokens by cache_source,
// token_usage, num_running_reqs), SGLang without the cache_source label,
// SGLang with only the cache_hit_rate gauge, and vLLM v0 (gpu_ names).
func TestDeriveFallbackNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name              string
		page              func(k int) string
		backend           string
		gpu, ext, overall float64 // NaN-free: -1 means "not valid"
		kvMean            float64
	}{
		{
			name: "sglang with cache_source",
			page: func(k int) string {
				return "# TYPE sglang:prompt_tokens_total counter\nsglang:prompt_tokens_total{tp_rank=\"0\"} " + itoa(1000*k) + "\n" +
					"# TYPE sglang:cached_tokens_total counter\n" +
					"sglang:cached_tokens_total{cache_source=\"device\",tp_rank=\"0\"} " + itoa(300*k) + "\n" +
					"sglang:cached_tokens_total{cache_source=\"host\",tp_rank=\"0\"} " + itoa(500*k) + "\n" +
					"# TYPE sglang:token_usage gauge\nsglang:token_usage{tp_rank=\"0\"} 0.25\nsglang:token_usage{tp_rank=\"1\"} 0.75\n" +
					"# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{tp_rank=\"0\"} 2\nsglang:num_running_reqs{tp_rank=\"1\"} 2\n"
			},
			backend: "sglang", gpu: 0.3, ext: 0.5, overall: 0.8, kvMean: 0.5,
		},
		{
			name: "sglang cached_tokens without cache_source",
			page: func(k int) string {
				return "# TYPE sglang:prompt_tokens_total counter\nsglang:prompt_tokens_total " + itoa(1000*k) + "\n" +
					"# TYPE sglang:cached_tokens_total counter\nsglang:cached_tokens_total " + itoa(250*k) + "\n"
			},
			backend: "sglang", gpu: 0.25, ext: -1, overall: 0.25, kvMean: -1,
		},
		{
			name:    "sglang hit-rate gauge only",
			page:    func(k int) string { return "# TYPE sglang:cache_hit_rate gauge\nsglang:cache_hit_rate 0.4\n" },
			backend: "sglang", gpu: 0.4, ext: -1, overall: -1, kvMean: -1,
		},
		{
			name: "vllm v0 names",
			page: func(k int) string {
				return "# TYPE vllm:gpu_prefix_cache_queries_total counter\nvllm:gpu_prefix_cache_queries_total " + itoa(100*k) + "\n" +
					"# TYPE vllm:gpu_prefix_cache_hits_total counter\nvllm:gpu_prefix_cache_hits_total " + itoa(10*k) + "\n" +
					"# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc 0.6\n" +
					"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n"
			},
			backend: "vllm", gpu: 0.1, ext: -1, overall: 0.1, kvMean: 0.6,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, c.page)
			s := New(Config{URLs: []string{r.url()}, SliceDuration: time.Second, Clock: r.clock})
			for k := 0; k <= 8; k++ {
				r.k.Store(int64(k))
				s.Scrape(t.Context())
			}
			d := Derive(s.Snapshot())
			check := func(what string, got float64, valid bool, want float64) {
				t.Helper()
				if (want < 0) != !valid || (valid && !near(got, want)) {
					t.Errorf("%s = %v (valid %v), want %v", what, got, valid, want)
				}
			}
			check("GPU", d.GPUPrefixHitRate, d.GPUPrefixHitRateValid, c.gpu)
			check("external", d.ExternalHitRate, d.ExternalHitRateValid, c.ext)
			check("overall", d.OverallHitRate, d.OverallHitRateValid, c.overall)
			check("KV mean", d.KVUsageMeanActive, d.KVUsageMeanActiveValid, c.kvMean)
			if d.Backend != c.backend {
				t.Errorf("backend %q want %q", d.Backend, c.backend)
			}
		})
	}
}

// TestGaugeEngineAverageIsNotSum pins the averaging of gauges over engines
// on the numbers of InferenceX v0.2's bug: eight engines at 0.5 must give
// 0.5, not 4.0.
func TestGaugeEngineAverageIsNotSum(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(k int) string {
		var b strings.Builder
		b.WriteString("# TYPE vllm:kv_cache_usage_perc gauge\n# TYPE vllm:num_requests_running gauge\n")
		for e := range 8 {
			fmt.Fprintf(&b, "vllm:kv_cache_usage_perc{engine=\"%d\"} 0.5\nvllm:num_requests_running{engine=\"%d\"} 1\n", e, e)
		}
		return b.String()
	})
	s := New(Config{URLs: []string{r.url()}, Clock: r.clock})
	for k := 0; k <= 8; k++ {
		r.k.Store(int64(k))
		s.Scrape(t.Context())
	}
	d := Derive(s.Snapshot())
	lf := s.Live()
	if d.KVUsageMeanActive != 0.5 || d.KVUsagePeak != 0.5 || lf.KVUsage != 0.5 || lf.Running != 8 {
		t.Errorf("mean %v peak %v live %v running %v: want 0.5 0.5 0.5 (averaged) and 8 running (counts add)",
			d.KVUsageMeanActive, d.KVUsagePeak, lf.KVUsage, lf.Running)
	}
}
