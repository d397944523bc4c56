package servermetrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentperf/agentperf/server/sim"
)

// chat sends one streaming chat request and drains it.
func chat(t *testing.T, base, prefix string, i, maxTokens int) {
	body := fmt.Sprintf(`{"model":"agentperf-sim","stream":true,"messages":[{"role":"system","content":%q},{"role":"user","content":"turn %d"}],"max_tokens":%d,"ignore_eos":true}`,
		prefix, i, maxTokens)
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("sim answered %d", resp.StatusCode)
	}
}

// TestAgainstSimSeveralEngines scrapes the in-process simulator (three
// data-parallel engines with an offload tier) during real traffic and
// checks the derived figures against the simulator's own counters: the
// window deltas summed over engines must equal the server's totals
// exactly, and the KV figures must stay per-engine (never summed).
func TestAgainstSimSeveralEngines(t *testing.T) {
	t.Parallel()
	cfg := sim.DefaultConfig()
	cfg.Engines = 3
	cfg.MaxModelLen = 4096
	cfg.KVCapacityTokens = 8192
	cfg.OffloadCapacityTokens = 65536
	cfg.DecodeBaseMs = 1
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })

	var logs strings.Builder
	var logMu sync.Mutex
	urls := URLsFrom(srv.URL+"/v1", nil, nil)
	s := New(Config{URLs: urls, Interval: 10 * time.Millisecond, SliceDuration: 50 * time.Millisecond,
		Logf: func(f string, a ...any) { logMu.Lock(); fmt.Fprintf(&logs, f+"\n", a...); logMu.Unlock() }})
	ctx := t.Context()
	s.Baseline(ctx)
	s.MarkProfilingStart(time.Now())
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { s.Run(runCtx); close(done) }()
	prefix := strings.Repeat("package main; func f() { return } // shared context of the agent\n", 40)
	for wave := range 3 {
		var wg sync.WaitGroup
		for i := range 9 {
			wg.Add(1)
			go func() { defer wg.Done(); chat(t, srv.URL, prefix, wave*100+i, 16) }()
		}
		wg.Wait()
	}
	stop()
	<-done
	s.MarkProfilingEnd(time.Now())
	s.Final(ctx)
	d, err := s.Export(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := srv.Stats()
	t.Logf("derived: %s; sim: queries %d hits %d ext queries %d ext hits %d", fmtDerived(d), st.PrefixQueries, st.PrefixHits, st.ExternalQueries, st.ExternalHits)
	if d.ScrapeFailures != 0 {
		t.Fatalf("%d scrape failures against the sim:\n%s", d.ScrapeFailures, logs.String())
	}
	if !d.PromptTokensValid || d.PromptTokens != float64(st.PromptTokens) || d.GenerationTokens != float64(st.GenerationTokens) {
		t.Errorf("prompt/generation tokens %v/%v, sim says %d/%d", d.PromptTokens, d.GenerationTokens, st.PromptTokens, st.GenerationTokens)
	}
	if want := float64(st.PrefixHits) / float64(st.PrefixQueries); !d.GPUPrefixHitRateValid || !near(d.GPUPrefixHitRate, want) || st.PrefixHits == 0 {
		t.Errorf("GPU hit rate %v (valid %v), sim counters give %v (%d hits)", d.GPUPrefixHitRate, d.GPUPrefixHitRateValid, want, st.PrefixHits)
	}
	if st.ExternalQueries > 0 {
		want := float64(st.ExternalHits) / float64(st.ExternalQueries)
		if !d.ExternalHitRateValid || !near(d.ExternalHitRate, want) {
			t.Errorf("external hit rate %v, sim counters give %v", d.ExternalHitRate, want)
		}
		if want := float64(st.PrefixHits+st.ExternalHits) / float64(st.PrefixQueries); !near(d.OverallHitRate, want) {
			t.Errorf("overall hit rate %v, want %v", d.OverallHitRate, want)
		}
	}
	ex := s.Snapshot()
	kv := ex.Metrics["vllm:kv_cache_usage_perc"]
	if kv == nil || len(kv.Series) != 3 {
		t.Fatalf("kv_cache_usage_perc series: %+v, want one per engine", kv)
	}
	var peak float64
	engines := map[string]bool{}
	for _, se := range kv.Series {
		engines[se.Labels["engine"]] = true
		peak = max(peak, *se.Stats.Max)
		if se.EndpointURL != srv.URL+"/metrics" {
			t.Errorf("endpoint_url %q", se.EndpointURL)
		}
	}
	if len(engines) != 3 || !d.KVUsagePeakValid || d.KVUsagePeak != peak || peak > 1 {
		t.Errorf("KV peak %v, want the largest single-engine sample %v (<= 1) over 3 engines %v", d.KVUsagePeak, peak, engines)
	}
	if d.KVUsageMeanActiveValid && d.KVUsageMeanActive > d.KVUsagePeak {
		t.Errorf("KV mean over active slices %v exceeds the single-engine peak %v: engines were summed", d.KVUsageMeanActive, d.KVUsagePeak)
	}
}

func fmtDerived(d *Derived) string {
	return fmt.Sprintf("gpu %.3f/%v ext %.3f/%v overall %.3f/%v kv mean %.3f/%v (%d active slices) peak %.3f scrapes %d",
		d.GPUPrefixHitRate, d.GPUPrefixHitRateValid, d.ExternalHitRate, d.ExternalHitRateValid, d.OverallHitRate, d.OverallHitRateValid,
		d.KVUsageMeanActive, d.KVUsageMeanActiveValid, d.ActiveSlices, d.KVUsagePeak, d.Scrapes)
}

// TestAgainstSimSeriesAppearMidRun scrapes a simulator that, like a fresh
// llm-d-inference-sim or any prometheus_client server, exposes histograms
// and labelled series only once they are used: the baseline scrape sees
// none of them, later scrapes do. The scraper must neither panic nor lose
// the requests of the first scrape interval: a series born during the
// collection started at zero, so its first value is increase, and the
// histogram's window count equals the requests served.
func TestAgainstSimSeriesAppearMidRun(t *testing.T) {
	t.Parallel()
	cfg := sim.DefaultConfig()
	cfg.MaxModelLen = 4096
	cfg.KVCapacityTokens = 8192
	cfg.DecodeBaseMs = 1
	cfg.LazyMetrics = true
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })

	var logs strings.Builder
	var logMu sync.Mutex
	s := New(Config{URLs: URLsFrom(srv.URL, nil, nil), Interval: 5 * time.Millisecond, SliceDuration: 50 * time.Millisecond,
		Logf: func(f string, a ...any) { logMu.Lock(); fmt.Fprintf(&logs, f+"\n", a...); logMu.Unlock() }})
	ctx := t.Context()
	s.Baseline(ctx)
	if ex := s.Snapshot(); ex.Metrics["vllm:e2e_request_latency_seconds"] != nil || ex.Metrics["vllm:request_success"] != nil {
		t.Fatal("the baseline already holds the lazy series; the test would not exercise series born mid-run")
	}
	s.MarkProfilingStart(time.Now())
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { s.Run(runCtx); close(done) }()
	const waves, perWave = 4, 3
	for wave := range waves {
		var wg sync.WaitGroup
		for i := range perWave {
			wg.Add(1)
			go func() { defer wg.Done(); chat(t, srv.URL, "shared prefix of the agent\n", wave*100+i, 8) }()
		}
		wg.Wait()
		time.Sleep(20 * time.Millisecond) // let scrapes see each wave
	}
	stop()
	<-done
	s.MarkProfilingEnd(time.Now())
	s.Final(ctx)
	d, err := s.Export(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if d.CollectionError != "" || d.ScrapeFailures != 0 {
		t.Fatalf("collection error %q, %d failed scrapes:\n%s", d.CollectionError, d.ScrapeFailures, logs.String())
	}
	ex := s.Snapshot()
	const n = waves * perWave
	e2e := ex.Metrics["vllm:e2e_request_latency_seconds"]
	if e2e == nil || len(e2e.Series) != 1 || e2e.Series[0].Stats == nil || e2e.Series[0].Stats.Count == nil {
		t.Fatalf("e2e histogram missing from the export: %+v", e2e)
	}
	if got := *e2e.Series[0].Stats.Count; got != n {
		t.Errorf("e2e histogram count over the window %v, want %d requests", got, n)
	}
	if got := e2e.Series[0].Buckets["+Inf"]; got != n {
		t.Errorf("e2e +Inf bucket over the window %d, want %d", got, n)
	}
	succ := ex.Metrics["vllm:request_success"]
	if succ == nil {
		t.Fatal("request_success missing")
	}
	var length float64
	for _, se := range succ.Series {
		if se.Labels["finished_reason"] == "length" && se.Stats != nil && se.Stats.Total != nil {
			length += *se.Stats.Total
		}
	}
	if length != n {
		t.Errorf("request_success{finished_reason=length} increase %v, want %d", length, n)
	}
}
