package servermetrics

import (
	"math"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"
)

// Export is server_metrics_export.json (docs/artifacts.md). It is what
// Scraper.Snapshot builds and ReadExport decodes, so the
// derived figures and the plot work the same from a live run and from an
// artifact folder.
type Export struct {
	SchemaVersion string             `json:"schema_version"`
	AIPerfVersion string             `json:"aiperf_version,omitempty"`
	BenchmarkID   string             `json:"benchmark_id,omitempty"`
	Summary       Summary            `json:"summary"`
	Metrics       map[string]*Metric `json:"metrics"`
	WarmupMetrics map[string]*Metric `json:"warmup_metrics"`
	InputConfig   any                `json:"input_config"`
}

// Summary is the export's summary block.
type Summary struct {
	EndpointsConfigured []string `json:"endpoints_configured"`
	EndpointsSuccessful []string `json:"endpoints_successful"`
	// StartTime and EndTime bound the collection (first and last fetch) as
	// naive local ISO times with microseconds, as aiperf writes them.
	StartTime string `json:"start_time,omitempty"`
	EndTime   string `json:"end_time,omitempty"`
	// EndpointInfo lists the endpoints that returned data at least once (so
	// that min(first_update_ns), the plots' time zero, is always defined).
	EndpointInfo map[string]*EndpointInfo `json:"endpoint_info,omitempty"`
	// EndpointFailures (agentperf extension) lists every endpoint with at
	// least one failed fetch, including those that never answered.
	EndpointFailures map[string]*EndpointFailure `json:"endpoint_failures,omitempty"`
	// CollectionError (agentperf extension) is set when an internal error
	// stopped the collection mid-run; the export then holds no metrics.
	CollectionError string `json:"collection_error,omitempty"`
}

// EndpointInfo is the per-endpoint collection statistics of the summary.
type EndpointInfo struct {
	TotalFetches           int      `json:"total_fetches"`
	FailedFetches          int      `json:"failed_fetches"` // agentperf extension
	UniqueUpdates          int      `json:"unique_updates"`
	FirstFetchNs           int64    `json:"first_fetch_ns"`
	LastFetchNs            int64    `json:"last_fetch_ns"`
	FirstUpdateNs          int64    `json:"first_update_ns"`
	LastUpdateNs           int64    `json:"last_update_ns"`
	AvgFetchLatencyMs      float64  `json:"avg_fetch_latency_ms"`
	AvgUpdateIntervalMs    *float64 `json:"avg_update_interval_ms,omitempty"`
	MedianUpdateIntervalMs *float64 `json:"median_update_interval_ms,omitempty"`
	DurationSeconds        float64  `json:"duration_seconds"`
}

// EndpointFailure describes the failed fetches of one endpoint.
type EndpointFailure struct {
	FailedFetches int    `json:"failed_fetches"`
	TotalFetches  int    `json:"total_fetches"`
	LastError     string `json:"last_error"`
}

// Metric is one metric family: counters keyed without their _total
// suffix, histograms by their base name.
type Metric struct {
	Type        string    `json:"type"`
	Description string    `json:"description"`
	Unit        string    `json:"unit,omitempty"`
	Series      []*Series `json:"series"`
}

// Series is one (endpoint, label set) series of a Metric.
type Series struct {
	EndpointURL string            `json:"endpoint_url"`
	Labels      map[string]string `json:"labels,omitempty"`
	Stats       *Stats            `json:"stats"`
	// Buckets are the cumulative per-bucket deltas over the window
	// (histograms), keyed by upper bound ("0.05", "+Inf").
	Buckets    map[string]int64 `json:"buckets,omitempty"`
	Timeslices []Slice          `json:"timeslices,omitempty"`
}

// Stats is a series' window statistics. Which keys are set depends on the
// type: gauges avg..p99; counters total, rate and rate_*; histograms count,
// sum, avg, count_rate, sum_rate and pNN_estimate. Unset keys are omitted.
type Stats struct {
	Avg *float64 `json:"avg,omitempty"`
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	Std *float64 `json:"std,omitempty"`
	P1  *float64 `json:"p1,omitempty"`
	P5  *float64 `json:"p5,omitempty"`
	P10 *float64 `json:"p10,omitempty"`
	P25 *float64 `json:"p25,omitempty"`
	P50 *float64 `json:"p50,omitempty"`
	P75 *float64 `json:"p75,omitempty"`
	P90 *float64 `json:"p90,omitempty"`
	P95 *float64 `json:"p95,omitempty"`
	P99 *float64 `json:"p99,omitempty"`

	Total   *float64 `json:"total,omitempty"`
	Rate    *float64 `json:"rate,omitempty"`
	RateAvg *float64 `json:"rate_avg,omitempty"`
	RateMin *float64 `json:"rate_min,omitempty"`
	RateMax *float64 `json:"rate_max,omitempty"`
	RateStd *float64 `json:"rate_std,omitempty"`

	Count       *float64 `json:"count,omitempty"`
	Sum         *float64 `json:"sum,omitempty"`
	CountRate   *float64 `json:"count_rate,omitempty"`
	SumRate     *float64 `json:"sum_rate,omitempty"`
	P1Estimate  *float64 `json:"p1_estimate,omitempty"`
	P5Estimate  *float64 `json:"p5_estimate,omitempty"`
	P10Estimate *float64 `json:"p10_estimate,omitempty"`
	P25Estimate *float64 `json:"p25_estimate,omitempty"`
	P50Estimate *float64 `json:"p50_estimate,omitempty"`
	P75Estimate *float64 `json:"p75_estimate,omitempty"`
	P90Estimate *float64 `json:"p90_estimate,omitempty"`
	P95Estimate *float64 `json:"p95_estimate,omitempty"`
	P99Estimate *float64 `json:"p99_estimate,omitempty"`
}

func (st *Stats) percentiles() [len(quantiles)]**float64 {
	return [...]**float64{&st.P1, &st.P5, &st.P10, &st.P25, &st.P50, &st.P75, &st.P90, &st.P95, &st.P99}
}

func (st *Stats) estimates() [len(quantiles)]**float64 {
	return [...]**float64{&st.P1Estimate, &st.P5Estimate, &st.P10Estimate, &st.P25Estimate, &st.P50Estimate,
		&st.P75Estimate, &st.P90Estimate, &st.P95Estimate, &st.P99Estimate}
}

// Slice is one timeslice of a series: gauges avg/min/max, counters
// total/rate, histograms count/sum/avg.
type Slice struct {
	StartNs    int64    `json:"start_ns"`
	EndNs      int64    `json:"end_ns"`
	IsComplete *bool    `json:"is_complete,omitempty"` // only false, on a trailing partial slice
	Avg        *float64 `json:"avg,omitempty"`
	Min        *float64 `json:"min,omitempty"`
	Max        *float64 `json:"max,omitempty"`
	Total      *float64 `json:"total,omitempty"`
	Rate       *float64 `json:"rate,omitempty"`
	Count      *float64 `json:"count,omitempty"`
	Sum        *float64 `json:"sum,omitempty"`
}

// window is a time range of the collection: gauges use samples in
// [from, to]; counters the increase from the last sample at or before from
// to the closing sample: the last one at or before to, or with closeAfter
// the first one at or after to (the final scrape in a normal run), so that
// the counts of requests completing at the end of the window are included.
type window struct {
	from, to   int64
	closeAfter bool
}

// closeIdx returns the scrape index of e that closes w for counters.
func (w window) closeIdx(e *endpointData) int {
	if w.closeAfter {
		if g := e.idxGE(w.to); g < len(e.times) {
			return g
		}
	}
	return e.idxLE(w.to)
}

// Snapshot builds the export from everything collected so far. Timeslices
// are always built at the slice grid (Config.SliceDuration, or
// DefaultSliceDuration when that is zero); Export drops them from the file
// when Config.SliceDuration is zero.
//
// After an internal error (see Err), or when building the export hits
// one, Snapshot returns an export without metrics whose summary names
// the error (summary.collection_error).
func (s *Scraper) Snapshot() (ex *Export) {
	if s.Err() != nil {
		return s.stoppedExport()
	}
	defer func() {
		if v := recover(); v != nil {
			s.disable("building the export", v, debug.Stack())
			ex = s.stoppedExport()
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	ex = &Export{
		SchemaVersion: SchemaVersion,
		AIPerfVersion: s.cfg.AIPerfVersion,
		BenchmarkID:   s.cfg.BenchmarkID,
		Metrics:       map[string]*Metric{},
		WarmupMetrics: map[string]*Metric{},
		InputConfig:   s.cfg.InputConfig,
	}
	if ex.InputConfig == nil {
		ex.InputConfig = map[string]any{"server_metrics": map[string]any{"urls": append([]string{}, s.cfg.URLs...)}}
	}
	ex.Summary = st.summary()
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for _, e := range st.eps {
		if len(e.times) > 0 {
			first = min(first, e.times[0])
			last = max(last, e.times[len(e.times)-1])
		}
	}
	if first > last {
		return ex // nothing collected
	}
	prof := window{from: first, to: last}
	if s.profStartNs != 0 {
		prof.from = s.profStartNs
	}
	if s.profEndNs != 0 {
		prof.to = s.profEndNs
	}
	prof.closeAfter = true
	grid := int64(s.cfg.grid())
	if prof.to >= prof.from {
		ex.Metrics = st.metrics(prof, grid)
	}
	if s.profStartNs != 0 && s.profStartNs > first {
		ex.WarmupMetrics = st.metrics(window{from: first, to: s.profStartNs}, grid)
	}
	return ex
}

// stoppedExport is the export of a Scraper stopped by an internal error:
// no metrics (the store may be half-updated), the configured endpoints and
// the error.
func (s *Scraper) stoppedExport() *Export {
	ex := &Export{
		SchemaVersion: SchemaVersion,
		AIPerfVersion: s.cfg.AIPerfVersion,
		BenchmarkID:   s.cfg.BenchmarkID,
		Metrics:       map[string]*Metric{},
		WarmupMetrics: map[string]*Metric{},
		InputConfig:   s.cfg.InputConfig,
	}
	if ex.InputConfig == nil {
		ex.InputConfig = map[string]any{"server_metrics": map[string]any{"urls": append([]string{}, s.cfg.URLs...)}}
	}
	ex.Summary = Summary{EndpointsConfigured: append([]string{}, s.cfg.URLs...), EndpointsSuccessful: []string{}}
	if err := s.Err(); err != nil {
		ex.Summary.CollectionError = err.Error() + "; the run continued without server metrics from then on"
	}
	return ex
}

// summary builds the summary block.
func (st *store) summary() Summary {
	sm := Summary{EndpointsConfigured: []string{}, EndpointsSuccessful: []string{}}
	var first, last int64
	for _, e := range st.eps {
		sm.EndpointsConfigured = append(sm.EndpointsConfigured, e.url)
		if e.fetches > 0 {
			if first == 0 || e.firstFetchNs < first {
				first = e.firstFetchNs
			}
			last = max(last, e.lastFetchNs)
		}
		if e.failures > 0 {
			if sm.EndpointFailures == nil {
				sm.EndpointFailures = map[string]*EndpointFailure{}
			}
			sm.EndpointFailures[e.url] = &EndpointFailure{FailedFetches: e.failures, TotalFetches: e.fetches, LastError: e.lastErr}
		}
		if len(e.times) == 0 {
			continue
		}
		sm.EndpointsSuccessful = append(sm.EndpointsSuccessful, e.url)
		info := &EndpointInfo{
			TotalFetches:  e.fetches,
			FailedFetches: e.failures,
			UniqueUpdates: len(e.updates),
			FirstFetchNs:  e.firstFetchNs,
			LastFetchNs:   e.lastFetchNs,
		}
		upd := e.updates
		if len(upd) == 0 { // only when samples were added without a fetch
			upd = e.times
		}
		info.FirstUpdateNs, info.LastUpdateNs = upd[0], upd[len(upd)-1]
		if e.fetches > 0 {
			info.AvgFetchLatencyMs = float64(e.latencyNs) / float64(e.fetches) / 1e6
		}
		info.DurationSeconds = float64(info.LastUpdateNs-info.FirstUpdateNs) / 1e9
		if n := len(upd); n >= 2 {
			iv := make([]float64, 0, n-1)
			for i := 1; i < n; i++ {
				iv = append(iv, float64(upd[i]-upd[i-1])/1e6)
			}
			info.AvgUpdateIntervalMs = fptr(float64(info.LastUpdateNs-info.FirstUpdateNs) / 1e6 / float64(n-1))
			slices.Sort(iv)
			info.MedianUpdateIntervalMs = fptr(percentileSorted(iv, 0.5))
		}
		if sm.EndpointInfo == nil {
			sm.EndpointInfo = map[string]*EndpointInfo{}
		}
		sm.EndpointInfo[e.url] = info
	}
	if first != 0 {
		sm.StartTime = isoLocal(first)
		sm.EndTime = isoLocal(last)
	}
	return sm
}

// isoLocal formats Unix ns as aiperf's naive local ISO time.
func isoLocal(ns int64) string {
	return time.Unix(0, ns).Local().Format("2006-01-02T15:04:05.000000")
}

// metrics builds the metric map of window w; grid > 0 adds timeslices.
func (st *store) metrics(w window, grid int64) map[string]*Metric {
	out := map[string]*Metric{}
	for _, f := range st.families {
		m := &Metric{Type: f.typ.String(), Description: f.help, Unit: unitOf(f.name, f.help)}
		ss := make([]*seriesData, 0, len(f.series))
		for _, sd := range f.series {
			ss = append(ss, sd)
		}
		sort.Slice(ss, func(i, j int) bool {
			ui, uj := st.eps[ss[i].ep].url, st.eps[ss[j].ep].url
			if ui != uj {
				return ui < uj
			}
			return ss[i].key < ss[j].key
		})
		for _, sd := range ss {
			if so := st.series(f.typ, sd, w, grid); so != nil {
				m.Series = append(m.Series, so)
			}
		}
		if len(m.Series) > 0 {
			out[f.name] = m
		}
	}
	return out
}

// slicesOf returns the slice boundaries of w at grid: n+1 edges, the last
// one w.to (a trailing partial slice is incomplete).
func slicesOf(w window, grid int64) []int64 {
	if grid <= 0 || w.to <= w.from {
		return nil
	}
	edges := []int64{w.from}
	for t := w.from + grid; ; t += grid {
		if t >= w.to {
			edges = append(edges, w.to)
			break
		}
		edges = append(edges, t)
	}
	return edges
}

// series is the export of one series over window w (slices of grid ns):
// its stats and timeslices by metric type, or nil when w holds no sample
// of it.
func (st *store) series(typ metricType, sd *seriesData, w window, grid int64) *Series {
	e := st.eps[sd.ep]
	so := &Series{EndpointURL: e.url}
	if len(sd.labels) > 0 {
		so.Labels = make(map[string]string, len(sd.labels))
		for _, l := range sd.labels {
			so.Labels[l.name] = l.value
		}
	}
	sw := seriesWindow{e: e, sd: sd, w: w, grid: grid, edges: slicesOf(w, grid), durS: float64(w.to-w.from) / 1e9,
		ref: e.idxLE(w.from), end: w.closeIdx(e)}
	ok := false
	switch {
	case typ.gaugeLike():
		ok = sw.gauge(so)
	case typ == typeCounter:
		ok = sw.counter(so)
	case typ == typeHistogram:
		ok = sw.histogram(so)
	}
	if !ok {
		return nil
	}
	return so
}

// seriesWindow is one series over one window: its endpoint's samples, the
// slice edges, the window's length in seconds and the sample indices that
// open and close it.
type seriesWindow struct {
	e        *endpointData
	sd       *seriesData
	w        window
	grid     int64
	edges    []int64
	durS     float64
	ref, end int
}

// gauge fills the stats and timeslices of a gauge (or gauge-like) series.
func (sw *seriesWindow) gauge(so *Series) bool {
	e, sd, w, edges, grid := sw.e, sw.sd, sw.w, sw.edges, sw.grid
	xs := gaugeSamples(e, sd, w.from, w.to, true)
	if len(xs) == 0 {
		return false
	}
	sm := summarize(xs)
	so.Stats = &Stats{Avg: fptr(sm.avg), Min: fptr(sm.min), Max: fptr(sm.max), Std: fptr(sm.std)}
	for i, p := range so.Stats.percentiles() {
		*p = fptr(sm.p[i])
	}
	for i := 0; i+1 < len(edges); i++ {
		last := i+2 == len(edges)
		xs := gaugeSamples(e, sd, edges[i], edges[i+1], last)
		if len(xs) == 0 {
			continue
		}
		sm := summarize(xs)
		sl := newSlice(edges[i], edges[i+1], grid)
		sl.Avg, sl.Min, sl.Max = fptr(sm.avg), fptr(sm.min), fptr(sm.max)
		so.Timeslices = append(so.Timeslices, sl)
	}
	return true
}

// counter fills the total, rate and per-slice rates of a counter.
func (sw *seriesWindow) counter(so *Series) bool {
	e, sd, edges, grid, ref, end, durS := sw.e, sw.sd, sw.edges, sw.grid, sw.ref, sw.end, sw.durS
	total, ok := increase(sd.vals, nil, sd.first, ref, end)
	if !ok {
		return false
	}
	so.Stats = &Stats{Total: fptr(total)}
	if durS > 0 {
		so.Stats.Rate = fptr(total / durS)
	}
	var rates []float64
	for i := 0; i+1 < len(edges); i++ {
		closeK := e.idxLE(edges[i+1])
		if i+2 == len(edges) {
			closeK = end
		}
		tot, ok := increase(sd.vals, nil, sd.first, e.idxLE(edges[i]), closeK)
		if !ok {
			continue
		}
		sl := newSlice(edges[i], edges[i+1], grid)
		d := float64(edges[i+1]-edges[i]) / 1e9
		sl.Total, sl.Rate = fptr(tot), fptr(tot/d)
		if sl.IsComplete == nil {
			rates = append(rates, tot/d)
		}
		so.Timeslices = append(so.Timeslices, sl)
	}
	if len(rates) > 0 {
		sm := summarize(rates)
		so.Stats.RateAvg, so.Stats.RateMin, so.Stats.RateMax, so.Stats.RateStd = fptr(sm.avg), fptr(sm.min), fptr(sm.max), fptr(sm.std)
	}
	return true
}

// histogram fills the count, sum, estimated percentiles, buckets and
// timeslices of a histogram.
func (sw *seriesWindow) histogram(so *Series) bool {
	e, sd, edges, grid, ref, end, durS := sw.e, sw.sd, sw.edges, sw.grid, sw.ref, sw.end, sw.durS
	h, ok := histDelta(sd, ref, end, true)
	if !ok {
		return false
	}
	so.Stats = &Stats{Count: fptr(h.count)}
	if h.count > 0 {
		so.Stats.Sum = fptr(h.sum)
		so.Stats.Avg = fptr(h.sum / h.count)
		if durS > 0 {
			so.Stats.CountRate = fptr(h.count / durS)
			so.Stats.SumRate = fptr(h.sum / durS)
		}
		if h.cum != nil {
			for i, p := range so.Stats.estimates() {
				*p = fptr(bucketQuantile(quantiles[i], sd.les, h.cum))
			}
			so.Buckets = make(map[string]int64, len(sd.les))
			for i, le := range sd.les {
				so.Buckets[formatLE(le)] = int64(math.Round(h.cum[i]))
			}
		}
	}
	for i := 0; i+1 < len(edges); i++ {
		closeK := e.idxLE(edges[i+1])
		if i+2 == len(edges) {
			closeK = end
		}
		hs, ok := histDelta(sd, e.idxLE(edges[i]), closeK, false)
		if !ok {
			continue
		}
		sl := newSlice(edges[i], edges[i+1], grid)
		sl.Count, sl.Sum = fptr(hs.count), fptr(hs.sum)
		if hs.count > 0 {
			sl.Avg = fptr(hs.sum / hs.count)
		}
		so.Timeslices = append(so.Timeslices, sl)
	}
	return true
}

func newSlice(from, to, grid int64) Slice {
	sl := Slice{StartNs: from, EndNs: to}
	if to-from < grid {
		f := false
		sl.IsComplete = &f
	}
	return sl
}

// gaugeSamples returns the non-NaN samples of sd in [from, to) (or [from,
// to] when inclusive).
func gaugeSamples(e *endpointData, sd *seriesData, from, to int64, inclusive bool) []float64 {
	lo := e.idxGE(from)
	hi := e.idxLE(to)
	if !inclusive && hi >= 0 && hi < len(e.times) && e.times[hi] == to {
		hi--
	}
	var xs []float64
	for k := max(lo, sd.first); k <= hi; k++ {
		if v := at(sd.vals, sd.first, k); !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	return xs
}

type histWindow struct {
	count, sum float64
	// cum are the cumulative bucket deltas, parallel to les; nil when not
	// asked for or when a bound of the window was not kept (see bucketAcc).
	cum []float64
}

// histDelta is the increase of a histogram between scrape indices (resets
// detected on the count); withBuckets adds the bucket deltas.
func histDelta(sd *seriesData, ref, end int, withBuckets bool) (histWindow, bool) {
	var h histWindow
	var ok bool
	h.count, ok = increase(sd.count, nil, sd.first, ref, end)
	if !ok {
		return h, false
	}
	h.sum, _ = increase(sd.sum, sd.count, sd.first, ref, end)
	if !withBuckets {
		return h, true
	}
	cum := make([]float64, len(sd.les))
	for i, b := range sd.buckets {
		hi, ok1 := b.accAt(end)
		lo, ok2 := b.accAt(ref)
		if !ok1 || !ok2 {
			return h, true
		}
		cum[i] = hi - lo
	}
	h.cum = cum
	return h, true
}

// unitOf infers aiperf's unit string from a metric name and its HELP text.
func unitOf(name, help string) string {
	n := strings.ToLower(name)
	if i := strings.LastIndexByte(n, ':'); i >= 0 {
		n = n[i+1:]
	}
	for _, r := range []struct{ suffix, unit string }{
		{"_seconds", "seconds"}, {"_milliseconds", "milliseconds"}, {"_ms", "milliseconds"},
		{"_tokens", "tokens"}, {"_bytes", "bytes"}, {"_blocks", "blocks"}, {"_errors", "errors"},
		{"_requests", "requests"}, {"_reqs", "requests"}, {"_percent", "percent"}, {"_pct", "percent"},
		{"_perc", "ratio"}, {"_ratio", "ratio"}, {"_rate", "ratio"}, {"_usage", "ratio"},
	} {
		if strings.HasSuffix(n, r.suffix) {
			return r.unit
		}
	}
	if strings.HasPrefix(n, "num_requests") || strings.HasPrefix(n, "request_success") {
		return "requests"
	}
	if strings.HasPrefix(n, "num_") {
		return "count"
	}
	h := strings.ToLower(help)
	for _, r := range []struct{ word, unit string }{
		{"tokens", "tokens"}, {"seconds", "seconds"}, {"bytes", "bytes"}, {"requests", "requests"},
	} {
		if strings.Contains(h, r.word) {
			return r.unit
		}
	}
	return ""
}
