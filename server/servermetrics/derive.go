package servermetrics

import (
	"encoding/json"
	"math"

	"github.com/agentperf/agentperf/server/engines"
)

// Metric names the derived figures read (export names: counters without
// _total), merged from every engine of the engines table. The first name
// present wins.
var (
	namesHits        = engines.Names(func(e *engines.Engine) []string { return e.PrefixHits })
	namesQueries     = engines.Names(func(e *engines.Engine) []string { return e.PrefixQueries })
	namesExtHits     = engines.Names(func(e *engines.Engine) []string { return e.ExternalHits })
	namesExtQuery    = engines.Names(func(e *engines.Engine) []string { return e.ExternalQueries })
	namesKVUsage     = engines.Names(func(e *engines.Engine) []string { return e.KVUsage })
	namesRunning     = engines.Names(func(e *engines.Engine) []string { return e.Running })
	namesWaiting     = engines.Names(func(e *engines.Engine) []string { return e.Waiting })
	namesPrompt      = engines.Names(func(e *engines.Engine) []string { return e.PromptTokens })
	namesGen         = engines.Names(func(e *engines.Engine) []string { return e.GenerationTokens })
	namesHitGauge    = engines.Names(func(e *engines.Engine) []string { return e.HitRateGauge })
	namesPreemptions = engines.Names(func(e *engines.Engine) []string { return e.Preemptions })
)

// Derived are the server-side figures of a run with explicit definitions:
// those of the results table in InferenceX's AgentX v0.3 pull request for
// Kimi on MI355X with LMCache (Prefix cache %, Ext cache %, GPU KV avg %),
// which no InferenceX script computes, rebuilt from the scraped metrics.
// Rates and usages are fractions in [0, 1]; that table shows them ×100.
// Each figure has a Valid flag that is false when its inputs were absent
// (never a silent zero). All figures cover the profiling window.
type Derived struct {
	// GPUPrefixHitRate ("Prefix cache %", prefix_cache_hit_rate_gpu_local)
	// = Σ Δvllm:prefix_cache_hits / Σ Δvllm:prefix_cache_queries, token
	// counters summed over every series (engines, endpoints). Fallbacks:
	// vLLM v0's vllm:gpu_prefix_cache_*; SGLang Σ Δsglang:cached_tokens
	// {cache_source="device"} (all cached_tokens when unlabelled) /
	// Σ Δsglang:prompt_tokens; last, the mean of the sglang:cache_hit_rate
	// gauge averaged across engines.
	GPUPrefixHitRate      float64
	GPUPrefixHitRateValid bool
	// ExternalHitRate ("Ext cache %", prefix_cache_hit_rate_external_conditional)
	// = Σ Δvllm:external_prefix_cache_hits / Σ Δvllm:external_prefix_cache_queries.
	// It is conditional: the external tier (LMCache, CPU offload) is only
	// queried for tokens the GPU cache missed, so it cannot be added to the
	// GPU rate. SGLang: Σ Δcached_tokens{cache_source="host"} / Σ Δprompt_tokens.
	ExternalHitRate      float64
	ExternalHitRateValid bool
	// OverallHitRate (prefix_cache_hit_rate_overall) = (Σ Δprefix_cache_hits
	// + Σ Δexternal_prefix_cache_hits) / Σ Δprefix_cache_queries: the share
	// of all looked-up prompt tokens served from any cache tier. Without
	// external counters it equals the GPU rate. SGLang: (device + host
	// cached tokens) / prompt tokens.
	OverallHitRate      float64
	OverallHitRateValid bool
	// KVUsageMeanActive ("GPU KV avg %", gpu_kv_usage_mean_active): on the
	// slice grid of the profiling window, each engine's slice mean of
	// vllm:kv_cache_usage_perc (SGLang sglang:token_usage) is averaged
	// across engines (never summed); the figure is the mean over active
	// slices, those where any engine's num_requests_running slice mean is
	// > 0. Without a running gauge every slice counts (KVActiveByRunning
	// is then false).
	KVUsageMeanActive      float64
	KVUsageMeanActiveValid bool
	KVActiveByRunning      bool
	ActiveSlices           int // slices counted in KVUsageMeanActive
	// KVUsagePeak (gpu_kv_usage_peak) is the largest KV usage sample of
	// any single engine in the window (InferenceX HEAD's gpu_usage_pct).
	KVUsagePeak      float64
	KVUsagePeakValid bool

	// PromptTokens and GenerationTokens are Σ Δvllm:prompt_tokens and
	// Σ Δvllm:generation_tokens (SGLang equivalents) over the window.
	PromptTokens, GenerationTokens           float64
	PromptTokensValid, GenerationTokensValid bool

	// Backend is the engine detected from the metric families
	// (engines.Detect: vllm, sglang, trtllm, dynamo, llamacpp), "unknown"
	// when families of no known engine were seen, "" when none were.
	Backend string
	// Families are the metric families seen (sorted); Engine the
	// detection, for the surfaces that say what an engine lacks or that
	// it is unknown.
	Families []string
	Engine   engines.Detection
	// ScrapeFailures and Scrapes count failed and all fetches over all
	// endpoints (set by Scraper.Export; zero from Derive alone).
	ScrapeFailures, Scrapes                  int
	EndpointsConfigured, EndpointsSuccessful int
	// LastScrapeError is the text of the most recent failed fetch of any
	// endpoint ("" when none failed; set by Scraper.Export).
	LastScrapeError string
	// CollectionError is set (by Scraper.Export) when an internal error
	// stopped the collection: the run went on without server metrics from
	// then on, and the export holds none (see Scraper.Err).
	CollectionError string
}

// Map returns the figures under their explicit names for run metadata;
// figures that are not valid are left out.
func (d *Derived) Map() map[string]any {
	m := map[string]any{
		"server_metrics_scrapes":         d.Scrapes,
		"server_metrics_scrape_failures": d.ScrapeFailures,
		"server_metrics_endpoints":       d.EndpointsConfigured,
		"server_metrics_endpoints_ok":    d.EndpointsSuccessful,
	}
	put := func(k string, v float64, ok bool) {
		if ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			m[k] = v
		}
	}
	put("prefix_cache_hit_rate_gpu_local", d.GPUPrefixHitRate, d.GPUPrefixHitRateValid)
	put("prefix_cache_hit_rate_external_conditional", d.ExternalHitRate, d.ExternalHitRateValid)
	put("prefix_cache_hit_rate_overall", d.OverallHitRate, d.OverallHitRateValid)
	put("gpu_kv_usage_mean_active", d.KVUsageMeanActive, d.KVUsageMeanActiveValid)
	put("gpu_kv_usage_peak", d.KVUsagePeak, d.KVUsagePeakValid)
	put("server_prompt_tokens", d.PromptTokens, d.PromptTokensValid)
	put("server_generation_tokens", d.GenerationTokens, d.GenerationTokensValid)
	if d.Backend != "" {
		m["server_metrics_backend"] = d.Backend
	}
	return m
}

// firstMetric returns the first of names present in ms.
func firstMetric(ms map[string]*Metric, names []string) (*Metric, string) {
	for _, n := range names {
		if m := ms[n]; m != nil && len(m.Series) > 0 {
			return m, n
		}
	}
	return nil, ""
}

// counterSum sums stats.total over the series of m that match keep (nil:
// all); ok is false when no series has a total.
func counterSum(m *Metric, keep func(*Series) bool) (sum float64, ok bool) {
	if m == nil {
		return 0, false
	}
	for _, s := range m.Series {
		if keep != nil && !keep(s) {
			continue
		}
		if s.Stats != nil && s.Stats.Total != nil {
			sum += *s.Stats.Total
			ok = true
		}
	}
	return sum, ok
}

func ratio(num, den float64, okNum, okDen bool) (float64, bool) {
	if !okNum || !okDen || !(den > 0) {
		return 0, false
	}
	return num / den, true
}

// Derive computes the derived figures from an export's profiling metrics.
// It works on a Snapshot and on a file read back with ReadExport.
func Derive(ex *Export) Derived {
	var d Derived
	if ex == nil {
		return d
	}
	d.EndpointsConfigured = len(ex.Summary.EndpointsConfigured)
	d.EndpointsSuccessful = len(ex.Summary.EndpointsSuccessful)
	ms := ex.Metrics
	d.Engine = DetectEngine(ex)
	d.Families = d.Engine.Families
	d.Backend = d.Engine.Name()
	d.vllmHitRates(ms)
	promptM, _ := firstMetric(ms, namesPrompt)
	genM, _ := firstMetric(ms, namesGen)
	d.PromptTokens, d.PromptTokensValid = counterSum(promptM, nil)
	d.GenerationTokens, d.GenerationTokensValid = counterSum(genM, nil)
	if e := d.Engine.Engine; e != nil && e.PromptExcludesCached {
		// The engine's prompt counter leaves out the cached tokens: add
		// them, so that the figure means every prompt token, as vLLM's.
		if c, ok := counterSum(metricOf(ms, e.CachedTokens), nil); ok && d.PromptTokensValid {
			d.PromptTokens += c
		}
	}
	if !d.GPUPrefixHitRateValid {
		d.cachedHitRates(ms)
	}
	d.kvUsage(ms)
	return d
}

// vllmHitRates sets the prefix-cache hit rates from vLLM's hit and query
// counters (GPU, external, and both over the GPU queries).
func (d *Derived) vllmHitRates(ms map[string]*Metric) {
	hitsM, _ := firstMetric(ms, namesHits)
	qM, _ := firstMetric(ms, namesQueries)
	hits, okH := counterSum(hitsM, nil)
	q, okQ := counterSum(qM, nil)
	ext, okE := counterSum(ms[namesExtHits[0]], nil)
	extQ, okEQ := counterSum(ms[namesExtQuery[0]], nil)
	d.GPUPrefixHitRate, d.GPUPrefixHitRateValid = ratio(hits, q, okH, okQ)
	d.ExternalHitRate, d.ExternalHitRateValid = ratio(ext, extQ, okE, okEQ)
	if d.GPUPrefixHitRateValid {
		if !okE {
			ext = 0
		}
		d.OverallHitRate, d.OverallHitRateValid = ratio(hits+ext, q, true, true)
	}
}

// DetectEngine names the engine of an export from its metric families.
func DetectEngine(ex *Export) engines.Detection {
	if ex == nil {
		return engines.Detection{}
	}
	names := make([]string, 0, len(ex.Metrics))
	for n := range ex.Metrics {
		names = append(names, n)
	}
	return engines.Detect(names)
}

// metricOf is the first of names present in ms (nil: none).
func metricOf(ms map[string]*Metric, names []string) *Metric {
	m, _ := firstMetric(ms, names)
	return m
}

// cachedHitRates sets the hit rates from an engine's cached-token counter
// over its prompt tokens (engines.Engine.CachedTokens): split by the
// engine's cache-source label when it has one (SGLang: device, host),
// with the cached tokens added to the prompt tokens when the engine's
// prompt counter excludes them (llama.cpp); else from a hit-rate gauge.
func (d *Derived) cachedHitRates(ms map[string]*Metric) {
	for _, e := range engines.All() {
		cm := metricOf(ms, e.CachedTokens)
		if cm == nil {
			continue
		}
		sgP, okP := counterSum(metricOf(ms, e.PromptTokens), nil)
		if e.PromptExcludesCached {
			c, okC := counterSum(cm, nil)
			sgP, okP = sgP+c, okP && okC
		}
		labelled := false
		for _, s := range cm.Series {
			if _, ok := s.Labels[e.CacheSourceLabel]; ok && e.CacheSourceLabel != "" {
				labelled = true
			}
		}
		src := func(v string) func(*Series) bool {
			return func(s *Series) bool { return s.Labels[e.CacheSourceLabel] == v }
		}
		if labelled {
			dev, okD := counterSum(cm, src("device"))
			host, okHo := counterSum(cm, src("host"))
			d.GPUPrefixHitRate, d.GPUPrefixHitRateValid = ratio(dev, sgP, okD, okP)
			d.ExternalHitRate, d.ExternalHitRateValid = ratio(host, sgP, okHo, okP)
			d.OverallHitRate, d.OverallHitRateValid = ratio(dev+host, sgP, okD || okHo, okP)
		} else {
			all, okA := counterSum(cm, nil)
			d.GPUPrefixHitRate, d.GPUPrefixHitRateValid = ratio(all, sgP, okA, okP)
			d.OverallHitRate, d.OverallHitRateValid = d.GPUPrefixHitRate, d.GPUPrefixHitRateValid
		}
		if d.GPUPrefixHitRateValid {
			return
		}
	}
	if g := metricOf(ms, namesHitGauge); g != nil {
		var sum float64
		var n int
		for _, s := range g.Series {
			if s.Stats != nil && s.Stats.Avg != nil {
				sum += *s.Stats.Avg
				n++
			}
		}
		if n > 0 {
			d.GPUPrefixHitRate, d.GPUPrefixHitRateValid = sum/float64(n), true
		}
	}
}

// kvUsage sets the KV-cache usage peak and its mean over the slices where
// requests were running.
func (d *Derived) kvUsage(ms map[string]*Metric) {
	kvM, _ := firstMetric(ms, namesKVUsage)
	runM, _ := firstMetric(ms, namesRunning)
	if kvM == nil {
		return
	}
	for _, s := range kvM.Series {
		if s.Stats != nil && s.Stats.Max != nil && (!d.KVUsagePeakValid || *s.Stats.Max > d.KVUsagePeak) {
			d.KVUsagePeak, d.KVUsagePeakValid = *s.Stats.Max, true
		}
	}
	kv := sliceMeans(kvM) // start -> mean across engines
	var active map[int64]float64
	if runM != nil {
		active = sliceMax(runM)
		d.KVActiveByRunning = true
	}
	var sum float64
	for start, v := range kv {
		if active != nil && !(active[start] > 0) {
			continue
		}
		sum += v
		d.ActiveSlices++
	}
	if d.ActiveSlices > 0 {
		d.KVUsageMeanActive, d.KVUsageMeanActiveValid = sum/float64(d.ActiveSlices), true
	}
}

// gaugeSliceValue is a gauge slice's avg, falling back to max.
func gaugeSliceValue(sl *Slice) (float64, bool) {
	if sl.Avg != nil {
		return *sl.Avg, true
	}
	if sl.Max != nil {
		return *sl.Max, true
	}
	return 0, false
}

// sliceMeans averages a gauge's slice values across series (engines), by
// slice start.
func sliceMeans(m *Metric) map[int64]float64 {
	sum := map[int64]float64{}
	n := map[int64]int{}
	for _, s := range m.Series {
		for i := range s.Timeslices {
			if v, ok := gaugeSliceValue(&s.Timeslices[i]); ok {
				sum[s.Timeslices[i].StartNs] += v
				n[s.Timeslices[i].StartNs]++
			}
		}
	}
	for k := range sum {
		sum[k] /= float64(n[k])
	}
	return sum
}

// sliceMax is the largest slice value of a gauge across series, by start.
func sliceMax(m *Metric) map[int64]float64 {
	out := map[int64]float64{}
	for _, s := range m.Series {
		for i := range s.Timeslices {
			if v, ok := gaugeSliceValue(&s.Timeslices[i]); ok {
				if cur, seen := out[s.Timeslices[i].StartNs]; !seen || v > cur {
					out[s.Timeslices[i].StartNs] = v
				}
			}
		}
	}
	return out
}

// MarshalJSON writes the figures under their explicit names (Map), so a
// Derived placed in run metadata reads as prefix_cache_hit_rate_gpu_local
// etc., with invalid figures left out rather than written as zero.
func (d Derived) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.Map())
}
