package servermetrics

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// t0 is the fixed start of every fixture collection.
var t0 = time.Unix(1_790_000_000, 0)

// step is the fake scrape interval of the fixtures.
const step = 250 * time.Millisecond

// rig serves a /metrics page that is a function of the scrape index k, and
// a clock at t0 + k·step, so a test sets k, scrapes, and knows exactly what
// every sample was and when.
type rig struct {
	k    atomic.Int64
	srv  *httptest.Server
	page func(k int) string
	mu   sync.Mutex
	logs []string
}

func newRig(t *testing.T, page func(k int) string) *rig {
	t.Helper()
	r := &rig{page: page}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/metrics" {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, r.page(int(r.k.Load())))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *rig) url() string { return r.srv.URL + "/metrics" }

func (r *rig) clock() time.Time { return r.at(int(r.k.Load())) }

func (r *rig) at(k int) time.Time { return t0.Add(time.Duration(k) * step) }

func (r *rig) logf(format string, args ...any) {
	r.mu.Lock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *rig) logText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.logs, "\n")
}

// vllmPage is a two-engine vLLM-like page at scrape k:
//   - prefix_cache_queries grows 100/scrape per engine; hits 50 (engine 0)
//     and 25 (engine 1) per scrape: GPU hit rate 75/200 = 0.375.
//   - external queries 40, hits 30 per scrape per engine: 0.75.
//   - kv_cache_usage_perc: engine 0 0.2, engine 1 0.6 (0.9 at k=6) while
//     running (k in [4,12)); both 0 when idle.
//   - num_requests_running 3 per engine for k in [4,12), else 0.
//   - a TTFT histogram gaining 4 observations per scrape: 1 ≤0.1 s, 2 in
//     (0.1,0.5], 1 in (0.5,1]; sum +1.5 s.
func vllmPage(k int) string {
	var b strings.Builder
	active := k >= 4 && k < 12
	b.WriteString("# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.\n# TYPE vllm:prefix_cache_queries_total counter\n")
	for e := 0; e < 2; e++ {
		fmt.Fprintf(&b, "vllm:prefix_cache_queries_total{engine=\"%d\",model_name=\"m\"} %d\n", e, 100*k)
	}
	b.WriteString("# HELP vllm:prefix_cache_queries_created Prefix cache queries.\n# TYPE vllm:prefix_cache_queries_created gauge\n")
	for e := 0; e < 2; e++ {
		fmt.Fprintf(&b, "vllm:prefix_cache_queries_created{engine=\"%d\",model_name=\"m\"} 1.79e9\n", e)
	}
	b.WriteString("# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.\n# TYPE vllm:prefix_cache_hits_total counter\n")
	fmt.Fprintf(&b, "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} %d\n", 50*k)
	fmt.Fprintf(&b, "vllm:prefix_cache_hits_total{engine=\"1\",model_name=\"m\"} %d\n", 25*k)
	b.WriteString("# HELP vllm:external_prefix_cache_queries_total External prefix cache queries.\n# TYPE vllm:external_prefix_cache_queries_total counter\n")
	b.WriteString("# HELP vllm:external_prefix_cache_hits_total External prefix cache hits.\n# TYPE vllm:external_prefix_cache_hits_total counter\n")
	for e := 0; e < 2; e++ {
		fmt.Fprintf(&b, "vllm:external_prefix_cache_queries_total{engine=\"%d\",model_name=\"m\"} %d\n", e, 40*k)
		fmt.Fprintf(&b, "vllm:external_prefix_cache_hits_total{engine=\"%d\",model_name=\"m\"} %d\n", e, 30*k)
	}
	b.WriteString("# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n# TYPE vllm:kv_cache_usage_perc gauge\n")
	kv0, kv1 := 0.0, 0.0
	if active {
		kv0, kv1 = 0.2, 0.6
		if k == 6 {
			kv1 = 0.9
		}
	}
	fmt.Fprintf(&b, "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} %g\n", kv0)
	fmt.Fprintf(&b, "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"m\"} %g\n", kv1)
	b.WriteString("# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\n")
	run := 0
	if active {
		run = 3
	}
	for e := 0; e < 2; e++ {
		fmt.Fprintf(&b, "vllm:num_requests_running{engine=\"%d\",model_name=\"m\"} %d\n", e, run)
	}
	b.WriteString("# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n# TYPE vllm:time_to_first_token_seconds histogram\n")
	fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\"} %d\n", 1*k)
	fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.5\"} %d\n", 3*k)
	fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"1.0\"} %d\n", 4*k)
	fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\"} %d\n", 4*k)
	fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_count{engine=\"0\"} %d\n", 4*k)
	fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_sum{engine=\"0\"} %g\n", 1.5*float64(k))
	b.WriteString("# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n")
	b.WriteString("vllm:cache_config_info{block_size=\"16\",engine=\"0\"} 1.0\n")
	return b.String()
}

// collect runs the standard fixture schedule on s: baseline at k=0,
// scrapes k=1..16, profiling from k=4 to k=16 (3 s), final scrape at k=17.
func collect(t *testing.T, r *rig, s *Scraper, finalK int) {
	t.Helper()
	ctx := t.Context()
	r.k.Store(0)
	s.Baseline(ctx)
	for k := 1; k <= 16; k++ {
		r.k.Store(int64(k))
		if k == 4 {
			s.MarkProfilingStart(r.at(4))
		}
		s.Scrape(ctx)
	}
	s.MarkProfilingEnd(r.at(16))
	if finalK > 0 {
		r.k.Store(int64(finalK))
		s.Final(ctx)
	}
}
