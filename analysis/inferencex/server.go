package inferencex

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/agentperf/agentperf/server/engines"
	"github.com/agentperf/agentperf/server/servermetrics"
)

// val is an optional number.
type val struct {
	v  float64
	ok bool
}

func some(v float64) val { return val{v, true} }

func (x val) any() any { return optNum(x.v, x.ok) }

// intAny is the value rounded to an integer (token counters), or null.
func (x val) intAny() any {
	if !x.ok || math.IsNaN(x.v) || math.IsInf(x.v, 0) {
		return nil
	}
	return int64(math.Round(x.v))
}

func rate(num, den val) val {
	if !num.ok || !den.ok || !(den.v > 0) {
		return val{}
	}
	return some(num.v / den.v)
}

// serverFigures are the server-side numbers of the result (profiling
// window of server_metrics_export.json).
type serverFigures struct {
	present     bool
	adapter     string // vllm, sglang, dynamo-vllm, unknown, none
	metricCount int

	gpuHit, cpuHit, extHit, overallHit val
	prefixHits, prefixQueries          val
	extHits, extQueries                val
	cachedBySource                     map[string]float64 // SGLang cache_source totals

	frontendHit, routerKVHit, routerSharedHit val
	frontendCached, frontendInput             val

	gpuUsage, cpuUsage         val // fractions 0–1, averaged over engines
	cpuUsed, cpuTotal          val
	bytesG2C, bytesC2G         val
	timeG2C, timeC2G           val
	bwG2C, bwC2G               val
	promptTotal, genTotal      val
	bySource                   map[string]float64 // vllm:prompt_tokens_by_source
	srcGPU, srcExt, srcCompute val

	sources []obj

	// v2 only: the flat schema's hit rates (hits/queries, no by-source
	// override).
	v2GPUHit, v2ExtHit val

	warnings []string
}

// counterSum sums a counter's window totals (histograms: their sums) over
// the series of the first metric of names that has any, filtered by keep.
func counterSum(ms map[string]*servermetrics.Metric, names []string, keep func(*servermetrics.Series) bool) val {
	for _, n := range names {
		m := ms[n]
		if m == nil {
			continue
		}
		var out val
		for _, s := range m.Series {
			if s == nil || s.Stats == nil || (keep != nil && !keep(s)) {
				continue
			}
			switch {
			case s.Stats.Total != nil:
				out = some(out.v + *s.Stats.Total)
			case s.Stats.Sum != nil:
				out = some(out.v + *s.Stats.Sum)
			}
		}
		if out.ok {
			return out
		}
	}
	return val{}
}

// sumByLabel sums a counter's totals by the value of label.
func sumByLabel(ms map[string]*servermetrics.Metric, name, label string, keep func(*servermetrics.Series) bool) map[string]float64 {
	m := ms[name]
	if m == nil {
		return nil
	}
	out := map[string]float64{}
	for _, s := range m.Series {
		if s == nil || s.Stats == nil || (keep != nil && !keep(s)) {
			continue
		}
		v, ok := s.Labels[label]
		if !ok {
			continue
		}
		switch {
		case s.Stats.Total != nil:
			out[v] += *s.Stats.Total
		case s.Stats.Sum != nil:
			out[v] += *s.Stats.Sum
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// gaugeStat is one series' gauge statistic: the first of keys present.
func gaugeStat(s *servermetrics.Series, keys ...string) (float64, bool) {
	if s == nil || s.Stats == nil {
		return 0, false
	}
	for _, k := range keys {
		var p *float64
		switch k {
		case "max":
			p = s.Stats.Max
		case "avg":
			p = s.Stats.Avg
		}
		if p != nil && !math.IsNaN(*p) && !math.IsInf(*p, 0) {
			return *p, true
		}
	}
	return 0, false
}

// combine is how a gauge's per-series values become one number.
type combine int

const (
	combineMean combine = iota // percentages and rates: averaged over engines, never summed
	combineMax                 // token counts of a shared pool: the largest
	combineSum                 // capacities of independent engines
)

// gauge combines one statistic (first of keys) of the series of the first
// metric of names that has any.
func gauge(ms map[string]*servermetrics.Metric, names []string, how combine, keep func(*servermetrics.Series) bool, keys ...string) val {
	for _, n := range names {
		m := ms[n]
		if m == nil {
			continue
		}
		var xs []float64
		for _, s := range m.Series {
			if keep != nil && !keep(s) {
				continue
			}
			if v, ok := gaugeStat(s, keys...); ok {
				xs = append(xs, v)
			}
		}
		if len(xs) == 0 {
			continue
		}
		switch how {
		case combineMax:
			return some(slices.Max(xs))
		case combineSum:
			var t float64
			for _, x := range xs {
				t += x
			}
			return some(t)
		}
		return some(mean(xs))
	}
	return val{}
}

// usage is a percentage gauge as a 0–1 fraction: each engine's peak
// (max, else avg) normalised (a value above 1.5 is read as percent and
// divided by 100), averaged over engines.
func usage(ms map[string]*servermetrics.Metric, names []string, keep func(*servermetrics.Series) bool) val {
	for _, n := range names {
		m := ms[n]
		if m == nil {
			continue
		}
		var xs []float64
		for _, s := range m.Series {
			if keep != nil && !keep(s) {
				continue
			}
			if v, ok := gaugeStat(s, "max", "avg"); ok {
				xs = append(xs, normFraction(v))
			}
		}
		if len(xs) > 0 {
			return some(mean(xs))
		}
	}
	return val{}
}

func normFraction(v float64) float64 {
	if v > 1.5 {
		return v / 100
	}
	return v
}

func labelIs(k, v string) func(*servermetrics.Series) bool {
	return func(s *servermetrics.Series) bool { return s != nil && s.Labels[k] == v }
}

// Metric names read (export names: counters without _total), from the
// engines table.
var (
	vllmEngine, _   = engines.Lookup("vllm")
	sglangEngine, _ = engines.Lookup("sglang")
	dynamoEngine, _ = engines.Lookup("dynamo")
	nPrompt         = vllmEngine.PromptTokens
	nGen            = vllmEngine.GenerationTokens
	nHits           = vllmEngine.PrefixHits[:1]
	nQueries        = vllmEngine.PrefixQueries[:1]
	nExtHits        = vllmEngine.ExternalHits
	nExtQueries     = vllmEngine.ExternalQueries
	nKVUsage        = vllmEngine.KVUsage
	nCPUUsage       = vllmEngine.CPUKVUsage
	nOffloadBytes   = vllmEngine.OffloadBytes[:1]
	nOffloadTime    = vllmEngine.OffloadTime
)

// computeServer derives the server figures from an export (nil: absent)
// and the kept records (for the token fallbacks).
func computeServer(ex *servermetrics.Export, framework string, req *requestFigures) serverFigures {
	f := serverFigures{adapter: "none"}
	var ms map[string]*servermetrics.Metric
	if ex != nil {
		ms = ex.Metrics
	}
	f.metricCount = len(ms)
	f.present = len(ms) > 0
	if !f.present {
		f.warnings = append(f.warnings, "server_metrics_export.json missing or empty: server figures are null, token totals come from the records")
	} else {
		det := servermetrics.DetectEngine(ex)
		f.adapter = detectAdapter(det, framework)
		switch f.adapter {
		case "sglang":
			f.sglang(ms)
		case "vllm", "dynamo-vllm":
			f.vllm(ms, f.adapter == "dynamo-vllm")
			if f.adapter == "dynamo-vllm" {
				f.dynamo(ms)
			}
		case "unknown":
			f.warnings = append(f.warnings, fmt.Sprintf("framework %q: %s; server figures are null", framework, det.UnknownText(8)))
		default:
			f.cachedEngine(ms, det.Engine)
		}
		if e := det.Engine; e != nil && e.Missing != "" {
			f.warnings = append(f.warnings, fmt.Sprintf("%s: %s, so those figures are null", e.Title, e.Missing))
		}
	}
	f.bwG2C = rate(f.bytesG2C, f.timeG2C)
	f.bwC2G = rate(f.bytesC2G, f.timeC2G)
	// Without server counters, the totals are the records' sums.
	if !f.promptTotal.ok && req.input.n > 0 {
		f.promptTotal = some(req.inputSum)
	}
	if !f.genTotal.ok && req.outActual.n > 0 {
		f.genTotal = some(req.outputSum)
	}
	return f
}

// detectAdapter is the report's name of the detected engine: Dynamo in
// front of vLLM (by the framework or dynamo_ families) is dynamo-vllm.
func detectAdapter(det engines.Detection, framework string) string {
	if strings.HasPrefix(strings.ToLower(framework), "dynamo") {
		return "dynamo-vllm"
	}
	switch n := det.Name(); n {
	case "dynamo":
		return "dynamo-vllm"
	case "":
		return "unknown"
	default:
		return n
	}
}

// cachedEngine reads an engine that has a cached-token counter but no
// hit and query counters (llama.cpp), and whatever else of the engines
// table's names it exports: its prompt tokens are all the prompt tokens
// (the cached ones added when its counter leaves them out), its hit rate
// the cached share of them.
func (f *serverFigures) cachedEngine(ms map[string]*servermetrics.Metric, e *engines.Engine) {
	if e == nil {
		return
	}
	f.promptTotal = counterSum(ms, e.PromptTokens, nil)
	f.genTotal = counterSum(ms, e.GenerationTokens, nil)
	cached := counterSum(ms, e.CachedTokens, nil)
	if e.PromptExcludesCached && f.promptTotal.ok && cached.ok {
		f.promptTotal = some(f.promptTotal.v + cached.v)
	}
	f.gpuHit = rate(cached, f.promptTotal)
	f.v2GPUHit = f.gpuHit
	f.overallHit = f.gpuHit
	if cached.ok && f.promptTotal.ok {
		f.srcGPU = cached
		f.srcCompute = some(f.promptTotal.v - cached.v)
	}
	f.gpuUsage = usage(ms, e.KVUsage, nil)
	f.prefixHits = counterSum(ms, e.PrefixHits, nil)
	f.prefixQueries = counterSum(ms, e.PrefixQueries, nil)
	if r := rate(f.prefixHits, f.prefixQueries); r.ok {
		f.gpuHit, f.v2GPUHit, f.overallHit = r, r, r
	}
}

func (f *serverFigures) vllm(ms map[string]*servermetrics.Metric, dynamo bool) {
	if dynamo {
		f.promptTotal = counterSum(ms, append(slices.Clone(dynamoEngine.PromptTokens), nPrompt...), nil)
		f.genTotal = counterSum(ms, append(slices.Clone(dynamoEngine.GenerationTokens), nGen...), nil)
	} else {
		f.promptTotal = counterSum(ms, nPrompt, nil)
		f.genTotal = counterSum(ms, nGen, nil)
	}
	f.prefixHits = counterSum(ms, nHits, nil)
	f.prefixQueries = counterSum(ms, nQueries, nil)
	f.gpuHit = rate(f.prefixHits, f.prefixQueries)
	f.v2GPUHit = f.gpuHit
	f.extHits = counterSum(ms, nExtHits, nil)
	f.extQueries = counterSum(ms, nExtQueries, nil)
	f.extHit = rate(f.extHits, f.extQueries)
	f.cpuHit = f.extHit
	f.v2ExtHit = f.extHit
	f.bySource = sumByLabel(ms, vllmEngine.PromptBySource[0], "source", nil)
	if f.bySource != nil {
		var total float64
		for _, v := range f.bySource {
			total += v
		}
		local, hasLocal := f.bySource["local_cache_hit"]
		ext, hasExt := f.bySource["external_kv_transfer"]
		comp, hasComp := f.bySource["local_compute"]
		if total > 0 {
			if hasLocal {
				f.gpuHit = some(local / total)
			}
			if hasExt {
				f.extHit = some(ext / total)
				f.cpuHit = f.extHit
			}
			f.overallHit = some((local + ext) / total)
		}
		f.srcGPU = val{local, hasLocal}
		f.srcExt = val{ext, hasExt}
		f.srcCompute = val{comp, hasComp}
	} else if f.gpuHit.ok {
		f.overallHit = f.gpuHit
	}
	f.gpuUsage = usage(ms, nKVUsage, nil)
	f.cpuUsage = usage(ms, nCPUUsage, nil)
	f.bytesG2C = counterSum(ms, vllmEngine.OffloadBytesG2C, nil)
	if !f.bytesG2C.ok {
		f.bytesG2C = counterSum(ms, nOffloadBytes, labelIs("transfer_type", "GPU_to_CPU"))
	}
	f.bytesC2G = counterSum(ms, vllmEngine.OffloadBytesC2G, nil)
	if !f.bytesC2G.ok {
		f.bytesC2G = counterSum(ms, nOffloadBytes, labelIs("transfer_type", "CPU_to_GPU"))
	}
	f.timeG2C = counterSum(ms, vllmEngine.OffloadTimeG2C, nil)
	if !f.timeG2C.ok {
		f.timeG2C = counterSum(ms, nOffloadTime, labelIs("transfer_type", "GPU_to_CPU"))
	}
	f.timeC2G = counterSum(ms, vllmEngine.OffloadTimeC2G, nil)
	if !f.timeC2G.ok {
		f.timeC2G = counterSum(ms, nOffloadTime, labelIs("transfer_type", "CPU_to_GPU"))
	}
	f.sources = vllmSources(ms)
}

func (f *serverFigures) sglang(ms map[string]*servermetrics.Metric) {
	e := sglangEngine
	f.promptTotal = counterSum(ms, e.PromptTokens, nil)
	f.genTotal = counterSum(ms, e.GenerationTokens, nil)
	f.cachedBySource = sumByLabel(ms, e.CachedTokens[0], e.CacheSourceLabel, nil)
	dev, hasDev := f.cachedBySource["device"]
	host, hasHost := f.cachedBySource["host"]
	f.gpuHit = rate(val{dev, hasDev}, f.promptTotal)
	f.v2GPUHit = f.gpuHit
	f.cpuHit = rate(val{host, hasHost}, f.promptTotal)
	f.extHit = f.cpuHit
	f.v2ExtHit = f.cpuHit
	if f.cachedBySource != nil {
		var all float64
		for _, v := range f.cachedBySource {
			all += v
		}
		f.overallHit = rate(some(all), f.promptTotal)
	}
	if !f.overallHit.ok {
		if g := gauge(ms, e.HitRateGauge, combineMean, nil, "avg", "max"); g.ok {
			f.overallHit = some(normFraction(g.v))
		}
	}
	f.gpuUsage = usage(ms, e.KVUsage, nil)
	f.cpuUsed = gauge(ms, e.HostUsedTokens, combineMax, nil, "max", "avg")
	f.cpuTotal = gauge(ms, e.HostTotalTokens, combineMax, nil, "max", "avg")
	f.cpuUsage = rate(f.cpuUsed, f.cpuTotal)
	f.srcGPU = val{dev, hasDev}
	f.srcExt = val{host, hasHost}
	f.srcCompute = counterSum(ms, []string{"sglang:realtime_tokens"}, labelIs("mode", "prefill_compute"))
	f.bySource = f.cachedBySource
}

func (f *serverFigures) dynamo(ms map[string]*servermetrics.Metric) {
	if !f.gpuUsage.ok {
		f.gpuUsage = usage(ms, dynamoEngine.KVUsage, nil)
	}
	f.frontendCached = counterSum(ms, dynamoEngine.CachedTokens, nil)
	f.frontendInput = counterSum(ms, dynamoEngine.PromptTokens, nil)
	f.frontendHit = rate(f.frontendCached, f.frontendInput)
	if g := gauge(ms, dynamoEngine.HitRateGauge[:1], combineMean, nil, "avg", "max"); g.ok {
		f.routerKVHit = some(normFraction(g.v))
	}
	if g := gauge(ms, dynamoEngine.HitRateGauge[1:], combineMean, nil, "avg", "max"); g.ok {
		f.routerSharedHit = some(normFraction(g.v))
	}
	if !f.overallHit.ok {
		if f.frontendHit.ok && f.frontendHit.v != 0 {
			f.overallHit = f.frontendHit
		} else if f.routerSharedHit.ok {
			f.overallHit = f.routerSharedHit
		}
	}
}

// sourceID identifies the engine a series comes from: role (from the
// dynamo_component or component label), endpoint and the worker_id,
// dp_rank and engine labels.
func sourceID(s *servermetrics.Series) string {
	comp := s.Labels["dynamo_component"]
	if comp == "" {
		comp = s.Labels["component"]
	}
	role := "combined"
	switch comp {
	case "prefill":
		role = "prefill"
	case "backend", "decode":
		role = "decode"
	case "frontend", "router":
		role = "router"
	}
	parts := []string{role}
	if s.EndpointURL != "" {
		parts = append(parts, s.EndpointURL)
	}
	for _, k := range []string{"worker_id", "dp_rank", "engine"} {
		if v, ok := s.Labels[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, "|")
}

// vllmSources lists the per-engine figures, by source id.
func vllmSources(ms map[string]*servermetrics.Metric) []obj {
	ids := map[string]bool{}
	for _, n := range []string{"vllm:prompt_tokens", "vllm:generation_tokens", "vllm:prefix_cache_hits",
		"vllm:prefix_cache_queries", "vllm:kv_cache_usage_perc", "vllm:prompt_tokens_by_source"} {
		if m := ms[n]; m != nil {
			for _, s := range m.Series {
				if s != nil {
					ids[sourceID(s)] = true
				}
			}
		}
	}
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	out := make([]obj, 0, len(sorted))
	for _, id := range sorted {
		keep := func(s *servermetrics.Series) bool { return s != nil && sourceID(s) == id }
		role, _, _ := strings.Cut(id, "|")
		out = append(out, obj{
			{"id", id},
			{"role", role},
			{"prompt_tokens", counterSum(ms, nPrompt, keep).any()},
			{"generation_tokens", counterSum(ms, nGen, keep).any()},
			{"prefix_cache_hit_rate", rate(counterSum(ms, nHits, keep), counterSum(ms, nQueries, keep)).any()},
			{"gpu_kv_cache_usage_pct", usage(ms, nKVUsage, keep).any()},
		})
	}
	return out
}
