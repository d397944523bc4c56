package dataset

import (
	"math"
	"sort"
)

// HitCount is a theoretical prefix-cache hit count for one request: Hit of
// its Total hash-id blocks would be served from an infinite prefix cache.
type HitCount struct{ Hit, Total int }

// HitDefinitionC names the theoretical hit-rate definition agentperf
// computes (definition C of docs/weka-traces.md, as aiperf v1.0+ stamps it
// on every turn).
const HitDefinitionC = "C: aiperf leading-run, trace scope incl. subagents, all requests"

// seqItem is one request of a trace in the trace's global time order.
type seqItem struct {
	t      float64
	ids    []uint32
	parent int // parent request index, or -1
	sub    int // flat subagent request index (depth-first), or -1
}

// traceSequence lists every request of t (parent and subagent, nested
// included) in file interleaving order, then stable-sorts it by start time.
func traceSequence(t *Trace) []seqItem {
	seq := make([]seqItem, 0, len(t.Requests)+t.NumSubagentRequests())
	// Depth-first numbering of subagent requests: an entry's own requests,
	// then its nested entries.
	base := map[*Subagent]int{}
	flat := 0
	var number func(ss []Subagent)
	number = func(ss []Subagent) {
		for i := range ss {
			base[&ss[i]] = flat
			flat += len(ss[i].Requests)
			number(ss[i].Subagents)
		}
	}
	number(t.Subagents)
	// Emit in file order: entries with After == i precede request i.
	var emit func(reqs []Request, ss []Subagent, reqBase int)
	emit = func(reqs []Request, ss []Subagent, reqBase int) {
		j := 0
		for i := 0; i <= len(reqs); i++ {
			for ; j < len(ss) && (ss[j].After <= i || i == len(reqs)); j++ {
				emit(ss[j].Requests, ss[j].Subagents, base[&ss[j]])
			}
			if i < len(reqs) {
				it := seqItem{t: reqs[i].T, ids: reqs[i].HashIDs, parent: -1, sub: -1}
				if reqBase < 0 {
					it.parent = i
				} else {
					it.sub = reqBase + i
				}
				seq = append(seq, it)
			}
		}
	}
	emit(t.Requests, t.Subagents, -1)
	sort.SliceStable(seq, func(a, b int) bool { return seq[a].t < seq[b].t })
	return seq
}

// idSet is a set of hash ids: a bitset for the small dense ids of real
// traces, a map past that.
type idSet struct {
	bits []uint64
	m    map[uint32]struct{}
}

const idSetDenseLimit = 1 << 24

func (s *idSet) has(id uint32) bool {
	if id < idSetDenseLimit {
		w := int(id >> 6)
		return w < len(s.bits) && s.bits[w]&(1<<(id&63)) != 0
	}
	_, ok := s.m[id]
	return ok
}

func (s *idSet) add(id uint32) {
	if id < idSetDenseLimit {
		w := int(id >> 6)
		if w >= len(s.bits) {
			s.bits = append(s.bits, make([]uint64, w+1-len(s.bits)+len(s.bits)/2)...)
		}
		s.bits[w] |= 1 << (id & 63)
		return
	}
	if s.m == nil {
		s.m = make(map[uint32]struct{})
	}
	s.m[id] = struct{}{}
}

// TracePrefixHits computes definition C over the whole trace scope: the
// requests of t (parent and subagent, nested included) are walked in
// global time order (ties keep file order); a request's hits are the
// leading run of its hash ids already seen in the trace, its total is the
// number of its hash ids (duplicates count), and all its ids are then
// marked seen. parent is indexed like t.Requests; subagent is indexed
// depth-first (each entry's own requests, then its nested entries).
func TracePrefixHits(t *Trace) (parent, subagent []HitCount) {
	parent, subagent, _ = tracePrefixHits(t)
	return parent, subagent
}

// tracePrefixHits is TracePrefixHits that also counts the distinct ids.
func tracePrefixHits(t *Trace) (parent, subagent []HitCount, unique int) {
	parent = make([]HitCount, len(t.Requests))
	subagent = make([]HitCount, t.NumSubagentRequests())
	var seen idSet
	for _, it := range traceSequence(t) {
		h := HitCount{Total: len(it.ids)}
		for h.Hit < len(it.ids) && seen.has(it.ids[h.Hit]) {
			h.Hit++
		}
		// the leading run is already seen; mark the rest
		for _, id := range it.ids[h.Hit:] {
			if !seen.has(id) {
				seen.add(id)
				unique++
			}
		}
		if it.parent >= 0 {
			parent[it.parent] = h
		} else {
			subagent[it.sub] = h
		}
	}
	return parent, subagent, unique
}

// PrefixHits returns the definition-C hit counts of t's parent requests
// (see TracePrefixHits; subagent requests still feed the seen set).
func PrefixHits(t *Trace) (parent []HitCount) {
	parent, _ = TracePrefixHits(t)
	return parent
}

// Summary describes a distribution. Percentiles are exact, interpolated
// linearly between neighbours as numpy does. All zero when Count is 0.
type Summary struct {
	Count int     `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// Summarize computes a Summary of xs (which it sorts in place).
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	sort.Float64s(xs)
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return Summary{
		Count: len(xs),
		Min:   xs[0],
		Mean:  sum / float64(len(xs)),
		P50:   Percentile(xs, 50),
		P90:   Percentile(xs, 90),
		P99:   Percentile(xs, 99),
		Max:   xs[len(xs)-1],
	}
}

// Percentile returns the p-th percentile (0–100) of sorted xs with linear
// interpolation (numpy's default); NaN for an empty slice.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	pos := p / 100 * float64(n-1)
	lo := int(math.Floor(pos))
	if lo >= n-1 {
		return sorted[n-1]
	}
	if lo < 0 {
		return sorted[0]
	}
	frac := pos - float64(lo)
	return sorted[lo] + frac*(sorted[lo+1]-sorted[lo])
}

// HistogramBucket counts values in (previous bucket's UpTo, UpTo]; the last
// bucket has UpTo 0 and counts everything above the previous one.
type HistogramBucket struct {
	UpTo  int `json:"up_to"`
	Count int `json:"count"`
}

// WindowCount counts the traces whose peak context (largest in+out of any
// request) exceeds a context window of Window tokens.
type WindowCount struct {
	Window int `json:"window"`
	Traces int `json:"traces"`
}

// HitRate is a theoretical prefix-cache hit rate with its definition.
type HitRate struct {
	Definition string  `json:"definition"`
	Hits       int64   `json:"hits"`
	Total      int64   `json:"total"`
	Rate       float64 `json:"rate"`
}

// ModelCount counts the requests recorded for one model name.
type ModelCount struct {
	Model    string `json:"model"`
	Requests int    `json:"requests"`
}

// contextBuckets are the upper bounds of the context-length histogram.
var contextBuckets = []int{8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576}

// contextWindows are the windows CorpusStats.TracesOver reports: 128k, 256k
// and 1M as vLLM's max_model_len usually spells them.
var contextWindows = []int{131072, 262144, 1048576}

// CorpusStats summarises a corpus (agentperf dataset info).
type CorpusStats struct {
	Traces           int `json:"traces"`
	ParentRequests   int `json:"parent_requests"`
	SubagentEntries  int `json:"subagent_entries"`
	SubagentRequests int `json:"subagent_requests"`
	// TracesWithSubagents counts traces with at least one subagent entry.
	TracesWithSubagents int `json:"traces_with_subagents"`
	// HashIDs counts the hash ids of all requests (parent and subagent);
	// UniqueHashIDs the distinct ids per trace, summed over traces.
	HashIDs       int64 `json:"hash_ids"`
	UniqueHashIDs int64 `json:"unique_hash_ids"`
	// InputTokens and OutputTokens sum in and out over all requests.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// RequestsPerTrace counts parent requests per trace.
	RequestsPerTrace Summary `json:"requests_per_trace"`
	// ISL and OSL are the recorded in and out of parent requests;
	// SubagentISL and SubagentOSL those of subagent requests.
	ISL         Summary `json:"isl"`
	OSL         Summary `json:"osl"`
	SubagentISL Summary `json:"subagent_isl"`
	SubagentOSL Summary `json:"subagent_osl"`
	// ThinkTime, APITime and TTFT (seconds) are over parent requests that
	// record them.
	ThinkTime Summary `json:"think_time_s"`
	APITime   Summary `json:"api_time_s"`
	TTFT      Summary `json:"ttft_s"`
	// TraceDuration (seconds) runs from a trace's first request start to
	// its last request end (start + api_time when recorded).
	TraceDuration Summary `json:"trace_duration_s"`
	// PeakContext is PeakContext(0) per trace.
	PeakContext Summary `json:"peak_context"`
	// ContextHistogram counts requests (parent and subagent) by in+out, in
	// buckets up to 8k, 16k, 32k, 64k, 128k, 256k, 512k, 1M and above.
	ContextHistogram []HistogramBucket `json:"context_histogram"`
	// TracesOver counts traces whose peak context exceeds 128k (131072),
	// 256k (262144) and 1M (1048576) tokens.
	TracesOver []WindowCount `json:"traces_over"`
	// Models counts requests per recorded model, most used first.
	Models []ModelCount `json:"models"`
	// TheoreticalHitRate is definition C (HitDefinitionC) over every
	// request of every trace.
	TheoreticalHitRate HitRate `json:"theoretical_prefix_cache_hit_rate"`
}

// ComputeStats computes statistics over traces.
func ComputeStats(traces []Trace) CorpusStats {
	b := newStatsBuilder(len(traces))
	for ti := range traces {
		b.trace(&traces[ti])
	}
	return b.finish()
}

// statsBuilder accumulates ComputeStats over one trace after another: the
// counts, the samples of each distribution, the histogram and the models.
type statsBuilder struct {
	st                                                          CorpusStats
	perTrace, isl, osl, sisl, sosl, think, api, ttft, dur, peak []float64
	hist                                                        []HistogramBucket
	over                                                        []WindowCount
	models                                                      map[string]int
	// first and last bound the current trace's span.
	first, last float64
}

func newStatsBuilder(traces int) *statsBuilder {
	b := &statsBuilder{models: map[string]int{}}
	b.st.Traces = traces
	b.hist = make([]HistogramBucket, len(contextBuckets)+1)
	for i, c := range contextBuckets {
		b.hist[i].UpTo = c
	}
	b.over = make([]WindowCount, len(contextWindows))
	for i, w := range contextWindows {
		b.over[i].Window = w
	}
	return b
}

// request counts one request (parent or subagent) of the current trace.
func (b *statsBuilder) request(r *Request) {
	st := &b.st
	st.HashIDs += int64(len(r.HashIDs))
	st.InputTokens += int64(r.In)
	st.OutputTokens += int64(r.Out)
	b.models[r.Model]++
	b.hist[sort.SearchInts(contextBuckets, r.In+r.Out)].Count++
	b.first = math.Min(b.first, r.T)
	end := r.T
	if !math.IsNaN(r.APITime) {
		end += r.APITime
	}
	b.last = math.Max(b.last, end)
}

// trace adds t: its parent requests, its subagents, its span and peak,
// and its theoretical prefix-cache hits.
func (b *statsBuilder) trace(t *Trace) {
	st := &b.st
	st.ParentRequests += len(t.Requests)
	b.perTrace = append(b.perTrace, float64(len(t.Requests)))
	b.first, b.last = math.Inf(1), math.Inf(-1)
	for ri := range t.Requests {
		r := &t.Requests[ri]
		b.request(r)
		b.isl = append(b.isl, float64(r.In))
		b.osl = append(b.osl, float64(r.Out))
		if !math.IsNaN(r.ThinkTime) {
			b.think = append(b.think, r.ThinkTime)
		}
		if !math.IsNaN(r.APITime) {
			b.api = append(b.api, r.APITime)
		}
		if !math.IsNaN(r.TTFT) {
			b.ttft = append(b.ttft, r.TTFT)
		}
	}
	if len(t.Subagents) > 0 {
		st.TracesWithSubagents++
	}
	b.subagents(t.Subagents)
	if !math.IsInf(b.first, 0) {
		b.dur = append(b.dur, b.last-b.first)
	}
	pk := t.PeakContext(0)
	b.peak = append(b.peak, float64(pk))
	for i := range b.over {
		if pk > b.over[i].Window {
			b.over[i].Traces++
		}
	}
	par, sub, unique := tracePrefixHits(t)
	for _, h := range append(par, sub...) {
		st.TheoreticalHitRate.Hits += int64(h.Hit)
		st.TheoreticalHitRate.Total += int64(h.Total)
	}
	st.UniqueHashIDs += int64(unique)
}

// subagents adds the subagent entries ss and, recursively, their children.
func (b *statsBuilder) subagents(ss []Subagent) {
	for si := range ss {
		b.st.SubagentEntries++
		for ri := range ss[si].Requests {
			r := &ss[si].Requests[ri]
			b.st.SubagentRequests++
			b.request(r)
			b.sisl = append(b.sisl, float64(r.In))
			b.sosl = append(b.sosl, float64(r.Out))
		}
		b.subagents(ss[si].Subagents)
	}
}

// finish summarizes the samples and returns the statistics.
func (b *statsBuilder) finish() CorpusStats {
	st := b.st
	st.RequestsPerTrace = Summarize(b.perTrace)
	st.ISL, st.OSL = Summarize(b.isl), Summarize(b.osl)
	st.SubagentISL, st.SubagentOSL = Summarize(b.sisl), Summarize(b.sosl)
	st.ThinkTime, st.APITime, st.TTFT = Summarize(b.think), Summarize(b.api), Summarize(b.ttft)
	st.TraceDuration, st.PeakContext = Summarize(b.dur), Summarize(b.peak)
	st.ContextHistogram, st.TracesOver = b.hist, b.over
	for m, n := range b.models {
		st.Models = append(st.Models, ModelCount{Model: m, Requests: n})
	}
	sort.Slice(st.Models, func(a, c int) bool {
		if st.Models[a].Requests != st.Models[c].Requests {
			return st.Models[a].Requests > st.Models[c].Requests
		}
		return st.Models[a].Model < st.Models[c].Model
	})
	st.TheoreticalHitRate.Definition = HitDefinitionC
	if st.TheoreticalHitRate.Total > 0 {
		st.TheoreticalHitRate.Rate = float64(st.TheoreticalHitRate.Hits) / float64(st.TheoreticalHitRate.Total)
	}
	return st
}
