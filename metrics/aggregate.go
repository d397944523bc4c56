package metrics

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// row is what the Collector keeps per record (and what Recompute rebuilds
// from profile_export.jsonl): the computed values and the few facts the
// aggregates need. It is about 230 bytes.
type row struct {
	v         Values
	startNs   int64
	endNs     int64
	hit       int64
	total     int64
	warmup    bool
	failed    bool // error record, not cancelled
	cancelled bool
}

// ok reports whether the row is a successful measurement.
func (r *row) ok() bool { return !r.failed && !r.cancelled }

// responseNs is send time + request latency (what aiperf's
// max_response_timestamp takes), or the end time when latency is unknown.
func (r *row) responseNs() int64 {
	if Has(r.v.RequestLatency) {
		return r.startNs + int64(math.Round(r.v.RequestLatency*1e6))
	}
	return r.endNs
}

// ErrorCount is one entry of error_summary: a distinct (code, type,
// message) and how many profiling records failed with it.
type ErrorCount struct {
	Code       int
	Type       string
	Message    string
	Category   string
	ServerType string // the server's own error type (error_type), when it gave one
	Count      int
}

// errKey identifies a distinct error.
type errKey struct {
	code     int
	typ, msg string
}

// maxDistinctErrors bounds error_summary; further distinct errors are
// counted under one "other errors" entry.
const maxDistinctErrors = 1000

// errorTally counts profiling errors by (code, type, message).
type errorTally struct {
	counts map[errKey]int
	cats   map[errKey]string
	stypes map[errKey]string
	other  int
}

func (t *errorTally) add(e *Error) {
	if t.counts == nil {
		t.counts = map[errKey]int{}
		t.cats = map[errKey]string{}
		t.stypes = map[errKey]string{}
	}
	k := errKey{e.Code, e.Type, e.Message}
	if _, ok := t.counts[k]; !ok && len(t.counts) >= maxDistinctErrors {
		t.other++
		return
	}
	t.counts[k]++
	if e.Category != "" {
		t.cats[k] = e.Category
	}
	if e.ServerType != "" {
		t.stypes[k] = e.ServerType
	}
}

// list returns the entries, most frequent first, then by code, type, message.
func (t *errorTally) list() []ErrorCount {
	out := make([]ErrorCount, 0, len(t.counts)+1)
	for k, n := range t.counts {
		out = append(out, ErrorCount{Code: k.code, Type: k.typ, Message: k.msg, Category: t.cats[k], ServerType: t.stypes[k], Count: n})
	}
	if t.other > 0 {
		out = append(out, ErrorCount{Message: "other errors (too many distinct messages)", Count: t.other})
	}
	slices.SortFunc(out, func(a, b ErrorCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Code, b.Code); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Type, b.Type); c != 0 {
			return c
		}
		return cmp.Compare(a.Message, b.Message)
	})
	return out
}

// MetricStat is the aggregate of one per-record metric.
type MetricStat struct {
	Metric *Metric
	Stat
}

// Scalar is an aggregate counter or derived value (written as a stat
// object with unit and avg only).
type Scalar struct {
	Tag, Header, Unit string
	Value             float64
	Int               bool  // a whole number written as a JSON integer (timestamps)
	IntValue          int64 // the exact value when Int
}

// Timeslice holds the aggregates of the profiling records whose request
// started in [StartNs, EndNs).
type Timeslice struct {
	StartNs, EndNs int64
	Complete       bool
	Metrics        []MetricStat
	Scalars        []Scalar
}

// Summary is the aggregate view of a run: the Go values behind
// profile_export_aiperf.json. Record metrics describe successful profiling
// records; NaN means "no data".
type Summary struct {
	Info RunInfo

	RequestCount          int // successful profiling requests
	ErrorRequestCount     int // failed profiling requests (not cancelled)
	CompletedRequestCount int // RequestCount + ErrorRequestCount
	CancelledRequestCount int // cancelled profiling requests
	WarmupCancelledCount  int // cancelled warmup requests (summary table only)
	ContextOverflowCount  int // context-overflow records of profiling (aiperf's context_overflow_count)
	WarmupOverflowCount   int // context-overflow records of the warmup
	WarmupRequestCount    int
	WarmupErrorCount      int

	BenchmarkDuration     float64 // seconds, max response − min request
	MinRequestNs          int64
	MaxResponseNs         int64
	RequestThroughput     float64 // requests/sec
	OutputTokenThroughput float64 // tokens/sec
	InputTokenThroughput  float64
	TotalTokenThroughput  float64

	// Theoretical prefix-cache hit over successful profiling records
	// (definition C): HitBlocks/TotalBlocks; Pct = 100·Hit/Total or NaN.
	TheoreticalHitBlocks, TheoreticalTotalBlocks int64
	TheoreticalHitPct                            float64

	Metrics       []MetricStat // per-record metrics with at least one value, table order
	Scalars       []Scalar     // counters and derived values, in export order
	WarmupMetrics []MetricStat
	Errors        []ErrorCount
	Timeslices    []Timeslice
	SliceDuration time.Duration
	// Occupancy is the achieved concurrency per phase (warmup when it
	// had records, then profiling): metadata.agentperf.achieved_concurrency.
	Occupancy []Occupancy

	// AccountingErr is non-nil when Info.Accounting does not add up.
	AccountingErr error

	timesliceProblem string // why Timeslices is empty although asked for
}

// Metric returns the stat of the metric tag, if present.
func (s *Summary) Metric(tag string) (Stat, bool) {
	for _, m := range s.Metrics {
		if m.Metric.Tag == tag {
			return m.Stat, true
		}
	}
	return Stat{}, false
}

// Scalar returns the scalar with the tag, if present.
func (s *Summary) Scalar(tag string) (Scalar, bool) {
	for _, x := range s.Scalars {
		if x.Tag == tag {
			return x, true
		}
	}
	return Scalar{}, false
}

// metricStats computes the stat of every metric over the rows selected by
// keep (among those listed in idx, or all when idx is nil), skipping
// metrics without values. buf is scratch space.
func metricStats(rows *columns, idx []int32, keep func(rowFlags) bool, buf []float64) ([]MetricStat, []float64) {
	var out []MetricStat
	for i := range Metrics {
		m := &Metrics[i]
		if m.Tag == "error_isl" {
			continue // error records only; summed in total_error_isl
		}
		buf = buf[:0]
		if idx == nil {
			rows.eachValue(i, keep, func(x float64) {
				if Has(x) {
					buf = append(buf, x)
				}
			})
		} else {
			for _, j := range idx {
				if !keep(rows.flags(int(j))) {
					continue
				}
				if x := rows.value(i, int(j)); Has(x) {
					buf = append(buf, x)
				}
			}
		}
		if len(buf) == 0 {
			continue
		}
		out = append(out, MetricStat{Metric: m, Stat: NewStat(m.Unit, buf)})
	}
	return out, buf
}

// overflowCounts are the context-overflow records of each phase (they are
// not rows: no metric covers them).
type overflowCounts struct{ profiling, warmup int }

// aggregate computes the Summary of rows: the blocks of
// profile_export_aiperf.json (docs/artifacts.md).
func aggregate(rows *columns, ovf overflowCounts, errs []ErrorCount, info RunInfo, slice time.Duration) *Summary {
	overflows := ovf.profiling
	s := &Summary{Info: info, Errors: errs, ContextOverflowCount: ovf.profiling, WarmupOverflowCount: ovf.warmup, SliceDuration: slice,
		BenchmarkDuration: math.NaN(), TheoreticalHitPct: math.NaN()}
	var buf []float64
	prof := func(f rowFlags) bool { return !f.warmup() && f.ok() }
	s.Metrics, buf = metricStats(rows, nil, prof, buf)
	s.WarmupMetrics, buf = metricStats(rows, nil, func(f rowFlags) bool { return f.warmup() && f.ok() }, buf)

	var (
		minStart, maxResp                  int64 = math.MaxInt64, math.MinInt64
		isl, osl, outTok, reasoning, errIS float64
		usage                              [5]float64
		hasUsage                           [5]bool
		cacheRead, cachePrompt             float64
		hasReasoning, hasErrISL, hasCache  bool
	)
	for i := range rows.len() {
		rr := rows.row(i)
		r := &rr
		if r.warmup {
			switch {
			case r.ok():
				s.WarmupRequestCount++
			case r.failed:
				s.WarmupErrorCount++
			case r.cancelled:
				s.WarmupCancelledCount++
			}
			continue
		}
		switch {
		case r.cancelled:
			s.CancelledRequestCount++
			continue
		case r.failed:
			s.ErrorRequestCount++
			if Has(r.v.ErrorISL) {
				errIS += r.v.ErrorISL
				hasErrISL = true
			}
			continue
		}
		s.RequestCount++
		minStart = min(minStart, r.startNs)
		maxResp = max(maxResp, r.responseNs())
		v := &r.v
		if Has(v.ISL) {
			isl += v.ISL
		}
		if Has(v.OSL) {
			osl += v.OSL
		}
		if Has(v.OutputTokenCount) {
			outTok += v.OutputTokenCount
		}
		if Has(v.ReasoningTokenCount) {
			reasoning += v.ReasoningTokenCount
			hasReasoning = true
		}
		for k, x := range [5]float64{v.UsagePromptTokens, v.UsageCompletionTokens, v.UsageTotalTokens, v.UsageReasoningTokens, v.UsageCacheReadTokens} {
			if Has(x) {
				usage[k] += x
				hasUsage[k] = true
			}
		}
		if Has(v.UsageCacheReadTokens) && Has(v.UsagePromptTokens) {
			cacheRead += v.UsageCacheReadTokens
			cachePrompt += v.UsagePromptTokens
			hasCache = true
		}
		if r.total > 0 {
			s.TheoreticalHitBlocks += r.hit
			s.TheoreticalTotalBlocks += r.total
		}
	}
	s.CompletedRequestCount = s.RequestCount + s.ErrorRequestCount
	if s.TheoreticalTotalBlocks > 0 {
		s.TheoreticalHitPct = 100 * float64(s.TheoreticalHitBlocks) / float64(s.TheoreticalTotalBlocks)
	}

	add := func(tag, header, unit string, v float64) {
		s.Scalars = append(s.Scalars, Scalar{Tag: tag, Header: header, Unit: unit, Value: v})
	}
	add("request_count", "Request Count", "requests", float64(s.RequestCount))
	if s.ErrorRequestCount > 0 {
		add("error_request_count", "Error Request Count", "requests", float64(s.ErrorRequestCount))
	}
	add("completed_request_count", "Completed Request Count", "requests", float64(s.CompletedRequestCount))
	if s.CompletedRequestCount > 0 {
		add("request_error_rate", "Request Error Rate", "%", 100*float64(s.ErrorRequestCount)/float64(s.CompletedRequestCount))
	}
	if s.CancelledRequestCount > 0 {
		add("cancelled_request_count", "Cancelled Request Count", "requests", float64(s.CancelledRequestCount))
	}
	add("context_overflow_count", "Context Overflow Count", "requests", float64(overflows))
	if overflows > 0 {
		add("skipped_context_overflow_count", "Skipped Context Overflow Count", "requests", float64(overflows))
	}
	if s.RequestCount > 0 {
		s.MinRequestNs, s.MaxResponseNs = minStart, maxResp
		s.BenchmarkDuration = float64(maxResp-minStart) / 1e9
		s.Scalars = append(s.Scalars,
			Scalar{Tag: "min_request_timestamp", Header: "Minimum Request Timestamp", Unit: "ns", Value: float64(minStart), Int: true, IntValue: minStart},
			Scalar{Tag: "max_response_timestamp", Header: "Maximum Response Timestamp", Unit: "ns", Value: float64(maxResp), Int: true, IntValue: maxResp})
		add("benchmark_duration", "Benchmark Duration", "sec", s.BenchmarkDuration)
		if d := s.BenchmarkDuration; d > 0 {
			s.RequestThroughput = float64(s.RequestCount) / d
			s.OutputTokenThroughput = osl / d
			s.InputTokenThroughput = isl / d
			s.TotalTokenThroughput = (isl + osl) / d
			add("request_throughput", "Request Throughput", "requests/sec", s.RequestThroughput)
			add("output_token_throughput", "Output Token Throughput", "tokens/sec", s.OutputTokenThroughput)
			add("input_token_throughput", "Input Token Throughput", "tokens/sec", s.InputTokenThroughput)
			add("total_token_throughput", "Total Token Throughput", "tokens/sec", s.TotalTokenThroughput)
		}
		add("total_isl", "Total Input Sequence Length", "tokens", isl)
		add("total_osl", "Total Output Sequence Length", "tokens", osl)
		add("total_output_tokens", "Total Output Tokens", "tokens", outTok)
		if hasReasoning {
			add("total_reasoning_tokens", "Total Reasoning Tokens", "tokens", reasoning)
		}
		for k, name := range [5]string{"prompt_tokens", "completion_tokens", "total_tokens", "reasoning_tokens", "prompt_cache_read_tokens"} {
			if hasUsage[k] {
				add("total_usage_"+name, "Total Usage "+usageHeaders[k], "tokens", usage[k])
			}
		}
		if hasCache && cachePrompt > 0 {
			add("overall_usage_prompt_cache_read_pct", "Overall Usage Prompt Cache Read", "%", 100*cacheRead/cachePrompt)
		}
		// e2e-normalized interactivity: 1 / pXX(latency_s / OSL), the
		// percentile of the lower-is-better quantity, inverted.
		buf = buf[:0]
		lat, osl := metricIndex("request_latency"), metricIndex("output_sequence_length")
		for i := range rows.len() {
			l, o := rows.value(lat, i), rows.value(osl, i)
			if prof(rows.flags(i)) && Has(l) && Has(o) && o > 0 {
				buf = append(buf, l/1000/o)
			}
		}
		if len(buf) > 0 {
			slices.Sort(buf)
			for _, p := range [2]float64{75, 90} {
				if q := Percentile(buf, p); q > 0 {
					tag := "e2e_normalized_interactivity_p75"
					if p == 90 {
						tag = "e2e_normalized_interactivity_p90"
					}
					add(tag, "E2E Normalized Interactivity P"+tag[len(tag)-2:], "tokens/sec/user", 1/q)
				}
			}
		}
	}
	if hasErrISL {
		add("total_error_isl", "Total Error Input Sequence Length", "tokens", errIS)
	}
	if slice > 0 {
		s.Timeslices, s.timesliceProblem = timeslices(rows, info, slice)
	}
	s.Occupancy = occupancies(rows, &s.Info)
	return s
}

var usageHeaders = [5]string{"Prompt Tokens", "Completion Tokens", "Total Tokens", "Reasoning Tokens", "Prompt Cache Read Tokens"}

// maxTimeslices bounds the timeslice export (a 1 s slice over 11 days).
const maxTimeslices = 1_000_000

// timeslices buckets the profiling records by request start into windows
// of length slice from the profiling start (the timeslice export,
// docs/artifacts.md). It returns a
// problem instead of slices when the window would need more than
// maxTimeslices of them (bogus timestamps).
func timeslices(rows *columns, info RunInfo, slice time.Duration) ([]Timeslice, string) {
	ps, pe := info.profilingWindow()
	var t0, t1 int64
	if !ps.IsZero() {
		t0 = ps.UnixNano()
	}
	if !pe.IsZero() {
		t1 = pe.UnixNano()
	}
	first := true
	for i := range rows.len() {
		if rows.flags(i).warmup() {
			continue
		}
		start, end := rows.times(i)
		if ps.IsZero() && (first || start < t0) {
			t0 = start
		}
		if pe.IsZero() && (first || end > t1) {
			t1 = end
		}
		first = false
	}
	if t1 <= t0 {
		return nil, ""
	}
	d := int64(slice)
	if (t1-t0)/d >= maxTimeslices {
		return nil, fmt.Sprintf("timeslices not written: the profiling window %s in %s slices would need more than %d of them (check the records' request_start_ns)",
			time.Duration(t1-t0), slice, maxTimeslices)
	}
	n := int((t1 - t0 + d - 1) / d)
	// Counting sort of the profiling rows by slice: idx[start[k]:start[k+1]]
	// are the rows of slice k, in record order.
	sliceOf := func(i int) int {
		st, _ := rows.times(i)
		if st < t0 {
			return 0
		}
		return min(int((st-t0)/d), n-1)
	}
	start := make([]int32, n+1)
	for i := range rows.len() {
		if !rows.flags(i).warmup() {
			start[sliceOf(i)+1]++
		}
	}
	for k := range n {
		start[k+1] += start[k]
	}
	idx := make([]int32, start[n])
	fill := slices.Clone(start[:n])
	for i := range rows.len() {
		if !rows.flags(i).warmup() {
			k := sliceOf(i)
			idx[fill[k]] = int32(i)
			fill[k]++
		}
	}
	out := make([]Timeslice, n)
	var buf []float64
	oslCol := metricIndex("output_sequence_length")
	for k := range out {
		ts := &out[k]
		ts.StartNs = t0 + int64(k)*d
		ts.EndNs = ts.StartNs + d
		ts.Complete = ts.EndNs <= t1
		b := idx[start[k]:start[k+1]]
		ts.Metrics, buf = metricStats(rows, b, rowFlags.ok, buf)
		okN, errN := 0, 0
		osl := 0.0
		for _, j := range b {
			f := rows.flags(int(j))
			switch {
			case f.ok():
				okN++
				if x := rows.value(oslCol, int(j)); Has(x) {
					osl += x
				}
			case f.failed():
				errN++
			}
		}
		secs := float64(min(ts.EndNs, t1)-ts.StartNs) / 1e9
		ts.Scalars = append(ts.Scalars, Scalar{Tag: "request_count", Header: "Request Count", Unit: "requests", Value: float64(okN)})
		if errN > 0 {
			ts.Scalars = append(ts.Scalars, Scalar{Tag: "error_request_count", Header: "Error Request Count", Unit: "requests", Value: float64(errN)})
		}
		ts.Scalars = append(ts.Scalars,
			Scalar{Tag: "request_throughput", Header: "Request Throughput", Unit: "requests/sec", Value: float64(okN) / secs},
			Scalar{Tag: "output_token_throughput", Header: "Output Token Throughput", Unit: "tokens/sec", Value: osl / secs})
	}
	return out, ""
}
