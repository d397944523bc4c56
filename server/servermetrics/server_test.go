package servermetrics

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestDerivedTwoEnginesGaugesNotSummed(t *testing.T) {
	t.Parallel()
	r := newRig(t, vllmPage)
	s := New(Config{URLs: []string{r.url()}, SliceDuration: time.Second, Clock: r.clock, Logf: r.logf})
	collect(t, r, s, 17)
	d, err := s.Export(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Profiling window k=4..16: 12 scrape steps of counter growth.
	for _, c := range []struct {
		name  string
		got   float64
		valid bool
		want  float64
	}{
		{"GPU hit rate = (600+300)/(1200+1200)", d.GPUPrefixHitRate, d.GPUPrefixHitRateValid, 0.375},
		{"external hit rate = 720/960", d.ExternalHitRate, d.ExternalHitRateValid, 0.75},
		{"overall = (900+720)/2400", d.OverallHitRate, d.OverallHitRateValid, 0.675},
		// Active slices 0 and 1; per-slice engine means (0.2+0.675)/2 and
		// (0.2+0.6)/2. Summing engines would give 0.8375; counting the idle
		// slice would give 0.279.
		{"KV mean over active slices, averaged across engines", d.KVUsageMeanActive, d.KVUsageMeanActiveValid, (0.4375 + 0.4) / 2},
		{"KV peak of any engine", d.KVUsagePeak, d.KVUsagePeakValid, 0.9},
	} {
		if !c.valid || !near(c.got, c.want) {
			t.Errorf("%s: got %v (valid %v), want %v", c.name, c.got, c.valid, c.want)
		}
	}
	if d.ActiveSlices != 2 || !d.KVActiveByRunning {
		t.Errorf("active slices %d by running %v, want 2 true", d.ActiveSlices, d.KVActiveByRunning)
	}
	if d.Backend != "vllm" || d.Scrapes != 18 || d.ScrapeFailures != 0 {
		t.Errorf("backend %q scrapes %d failures %d, want vllm 18 0", d.Backend, d.Scrapes, d.ScrapeFailures)
	}
	m := d.Map()
	for _, k := range []string{"prefix_cache_hit_rate_gpu_local", "prefix_cache_hit_rate_external_conditional",
		"prefix_cache_hit_rate_overall", "gpu_kv_usage_mean_active", "gpu_kv_usage_peak"} {
		if _, ok := m[k]; !ok {
			t.Errorf("Map() lacks %s", k)
		}
	}
}

func TestCounterStatsAndSlices(t *testing.T) {
	t.Parallel()
	r := newRig(t, vllmPage)
	s := New(Config{URLs: []string{r.url()}, SliceDuration: time.Second, Clock: r.clock})
	collect(t, r, s, 17)
	ex := s.Snapshot()
	q := ex.Metrics["vllm:prefix_cache_queries"]
	if q == nil || q.Type != "counter" || len(q.Series) != 2 {
		t.Fatalf("vllm:prefix_cache_queries = %+v, want a counter with 2 series", q)
	}
	if ex.Metrics["vllm:prefix_cache_queries_total"] != nil || ex.Metrics["vllm:prefix_cache_queries_created"] != nil {
		t.Error("export keeps _total or _created families")
	}
	s0 := q.Series[0]
	// The k=16 scrape falls on the profiling end and closes the window.
	if s0.Labels["engine"] != "0" || *s0.Stats.Total != 1200 || !near(*s0.Stats.Rate, 400) {
		t.Errorf("engine 0 stats %+v labels %v, want total 1200 rate 400", s0.Stats, s0.Labels)
	}
	// Slices [1s,2s) [2s,3s) [3s,4s].
	var sum float64
	var totals []float64
	for _, sl := range s0.Timeslices {
		totals = append(totals, *sl.Total)
		sum += *sl.Total
		if sl.IsComplete != nil {
			t.Errorf("slice %+v marked incomplete in a whole-second window", sl)
		}
	}
	if len(totals) != 3 || totals[0] != 400 || totals[1] != 400 || totals[2] != 400 || sum != *s0.Stats.Total {
		t.Errorf("slice totals %v (sum %v), want [400 400 400] summing to the window total", totals, sum)
	}
	if *s0.Stats.RateMin != 400 || *s0.Stats.RateMax != 400 || *s0.Stats.RateStd != 0 {
		t.Errorf("rate_min/max/std %v/%v/%v, want 400/400/0", *s0.Stats.RateMin, *s0.Stats.RateMax, *s0.Stats.RateStd)
	}
	if got := ex.Metrics["vllm:prefix_cache_queries"].Series[0].Timeslices[0].StartNs; got != r.at(4).UnixNano() {
		t.Errorf("first slice starts at %d, want the profiling start %d", got, r.at(4).UnixNano())
	}
	// Warmup: k=0..4.
	w := ex.WarmupMetrics["vllm:prefix_cache_queries"]
	if w == nil || *w.Series[0].Stats.Total != 400 {
		t.Fatalf("warmup queries = %+v, want total 400", w)
	}
	// Warmup has its own slices (the website merges them before the
	// profiling ones): [0s,1s) only, ending where profiling starts.
	if ws := w.Series[0].Timeslices; len(ws) != 1 || ws[0].StartNs != t0.UnixNano() || ws[0].EndNs != r.at(4).UnixNano() || *ws[0].Total != 400 {
		t.Errorf("warmup slices %+v", ws)
	}
	// Gauge: engine 0 has 8 samples of 0.2 and 5 of 0 in the window.
	kv := ex.Metrics["vllm:kv_cache_usage_perc"].Series[0].Stats
	if !near(*kv.Avg, 1.6/13) || *kv.Min != 0 || *kv.Max != 0.2 || *kv.P50 != 0.2 || kv.P99 == nil || kv.Std == nil {
		t.Errorf("kv engine 0 stats %+v", kv)
	}
	// Histogram: 12 steps × 4 observations.
	h := ex.Metrics["vllm:time_to_first_token_seconds"].Series[0]
	if *h.Stats.Count != 48 || !near(*h.Stats.Sum, 18) || !near(*h.Stats.Avg, 0.375) || !near(*h.Stats.P50Estimate, 0.3) {
		t.Errorf("histogram stats %+v", h.Stats)
	}
	if h.Buckets["0.1"] != 12 || h.Buckets["0.5"] != 36 || h.Buckets["1"] != 48 || h.Buckets["+Inf"] != 48 {
		t.Errorf("buckets %v", h.Buckets)
	}
}

// TestFinalScrapeClosesWindow: the profiling end falls between scrapes
// (as when the engine marks it after the last response); the final scrape
// right after it closes the window for counters, the gauges stop at the
// end, and the slice totals still add up to the window total.
func TestFinalScrapeClosesWindow(t *testing.T) {
	t.Parallel()
	r := newRig(t, vllmPage)
	s := New(Config{URLs: []string{r.url()}, SliceDuration: time.Second, Clock: r.clock})
	collect(t, r, s, 0)
	s.MarkProfilingEnd(r.at(16).Add(step / 2))
	r.k.Store(17)
	s.Final(t.Context())
	ex := s.Snapshot()
	q := ex.Metrics["vllm:prefix_cache_queries"].Series[0]
	var sum float64
	for _, sl := range q.Timeslices {
		sum += *sl.Total
	}
	if *q.Stats.Total != 1300 || sum != 1300 {
		t.Errorf("total %v, slice sum %v: want 1300 (13 steps, k=4..17) for both", *q.Stats.Total, sum)
	}
	if n := len(ex.Metrics["vllm:kv_cache_usage_perc"].Series[0].Timeslices); n != 4 {
		t.Errorf("%d gauge slices, want 4 (the last one partial)", n)
	}
	kv := ex.Metrics["vllm:kv_cache_usage_perc"].Series[0].Stats
	if !near(*kv.Avg, 1.6/13) {
		t.Errorf("gauge avg %v: the final scrape after the end must not be a gauge sample", *kv.Avg)
	}
}

func TestPartialTrailingSlice(t *testing.T) {
	t.Parallel()
	r := newRig(t, vllmPage)
	s := New(Config{URLs: []string{r.url()}, SliceDuration: time.Second, Clock: r.clock})
	collect(t, r, s, 0)
	s.MarkProfilingEnd(r.at(15)) // 2.75 s window
	sl := s.Snapshot().Metrics["vllm:prefix_cache_queries"].Series[0].Timeslices
	last := sl[len(sl)-1]
	if len(sl) != 3 || last.IsComplete == nil || *last.IsComplete || last.EndNs != r.at(15).UnixNano() {
		t.Fatalf("slices %+v: want 3 with a trailing is_complete=false ending at the window end", sl)
	}
	if *last.Total != 300 || *last.Rate != 400 {
		t.Errorf("partial slice total %v rate %v, want 300 and 300/0.75 s", *last.Total, *last.Rate)
	}
}

func TestCounterReset(t *testing.T) {
	t.Parallel()
	// A server restart mid-run: 0,10,20,30 | 5,15,25 (k=4 resets).
	vals := []int{0, 10, 20, 30, 5, 15, 25}
	r := newRig(t, func(k int) string {
		return "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total " + itoa(vals[min(k, len(vals)-1)]) + "\n" +
			"# TYPE h histogram\n" +
			"h_bucket{le=\"1\"} " + itoa(vals[min(k, len(vals)-1)]) + "\nh_bucket{le=\"+Inf\"} " + itoa(vals[min(k, len(vals)-1)]) +
			"\nh_sum " + itoa(2*vals[min(k, len(vals)-1)]) + "\nh_count " + itoa(vals[min(k, len(vals)-1)]) + "\n"
	})
	s := New(Config{URLs: []string{r.url()}, Clock: r.clock})
	for k := range vals {
		r.k.Store(int64(k))
		s.Scrape(t.Context())
	}
	ex := s.Snapshot()
	// increase = 10+10+10 + 5 (post-reset value) + 10+10 = 55
	if got := *ex.Metrics["vllm:prompt_tokens"].Series[0].Stats.Total; got != 55 {
		t.Errorf("counter total across a reset = %v, want 55", got)
	}
	h := ex.Metrics["h"].Series[0].Stats
	if *h.Count != 55 || *h.Sum != 110 {
		t.Errorf("histogram across a reset count %v sum %v, want 55 110", *h.Count, *h.Sum)
	}
}

func TestSeriesCreatedMidRunCountsFromZero(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(k int) string {
		p := "# TYPE vllm:prompt_tokens_by_source_total counter\nvllm:prompt_tokens_by_source_total{source=\"local_compute\"} " + itoa(100*k) + "\n"
		if k >= 3 {
			p += "vllm:prompt_tokens_by_source_total{source=\"external_kv_transfer\"} " + itoa(7*(k-2)) + "\n"
		}
		return p
	})
	s := New(Config{URLs: []string{r.url()}, Clock: r.clock})
	for k := 0; k <= 5; k++ {
		r.k.Store(int64(k))
		s.Scrape(t.Context())
	}
	ser := s.Snapshot().Metrics["vllm:prompt_tokens_by_source"].Series
	got := map[string]float64{}
	for _, x := range ser {
		got[x.Labels["source"]] = *x.Stats.Total
	}
	if got["local_compute"] != 500 || got["external_kv_transfer"] != 21 {
		t.Errorf("totals %v, want local_compute 500 and external_kv_transfer 21 (from zero at creation)", got)
	}
}

func TestDeadEndpointLoggedCountedAndExported(t *testing.T) {
	t.Parallel()
	r := newRig(t, vllmPage)
	dead := "http://127.0.0.1:1/metrics" // nothing listens on port 1
	s := New(Config{URLs: []string{r.url(), dead}, SliceDuration: time.Second, Clock: r.clock, Logf: r.logf})
	collect(t, r, s, 17)
	dir := t.TempDir()
	d, err := s.Export(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.ScrapeFailures != 18 || d.EndpointsConfigured != 2 || d.EndpointsSuccessful != 1 {
		t.Errorf("failures %d configured %d successful %d, want 18 2 1", d.ScrapeFailures, d.EndpointsConfigured, d.EndpointsSuccessful)
	}
	if !d.GPUPrefixHitRateValid || !near(d.GPUPrefixHitRate, 0.375) {
		t.Errorf("a dead second endpoint changed the hit rate: %v", d.GPUPrefixHitRate)
	}
	logs := r.logText()
	if !strings.Contains(logs, dead) || strings.Count(logs, "failed") != 1 {
		t.Errorf("want exactly one failure log line naming %s (rate-limited), got:\n%s", dead, logs)
	}
	ex, err := ReadExport(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Summary.EndpointsConfigured) != 2 || len(ex.Summary.EndpointsSuccessful) != 1 || ex.Summary.EndpointsSuccessful[0] != r.url() {
		t.Errorf("summary endpoints %+v", ex.Summary)
	}
	if ex.Summary.EndpointInfo[dead] != nil || ex.Summary.EndpointFailures[dead] == nil || ex.Summary.EndpointFailures[dead].FailedFetches != 18 {
		t.Errorf("dead endpoint info %+v failures %+v", ex.Summary.EndpointInfo[dead], ex.Summary.EndpointFailures[dead])
	}
	for _, name := range []string{JSONFile, CSVFile} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s missing, empty or not world-readable: %v %v", name, err, fi)
		}
	}
}

func TestNoEndpointAnswersStillWritesFiles(t *testing.T) {
	t.Parallel()
	s := New(Config{URLs: []string{"http://127.0.0.1:1/metrics"}})
	s.Baseline(t.Context())
	s.Final(t.Context())
	dir := t.TempDir()
	d, err := s.Export(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.GPUPrefixHitRateValid || d.KVUsagePeakValid || d.ScrapeFailures != 2 {
		t.Errorf("derived %+v, want nothing valid and 2 failures", d)
	}
	b, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil || !json.Valid(b) {
		t.Fatalf("json: %v", err)
	}
}

// TestExportJSONSchema reads the written file back generically and checks
// the fields and types that InferenceX and its website read
// (docs/artifacts.md).
func TestExportJSONSchema(t *testing.T) {
	t.Parallel()
	r := newRig(t, vllmPage)
	s := New(Config{URLs: []string{r.url()}, SliceDuration: time.Second, Clock: r.clock, BenchmarkID: "bid"})
	collect(t, r, s, 17)
	dir := t.TempDir()
	if _, err := s.Export(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	obj := func(v any, path string) map[string]any {
		t.Helper()
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: got %T, want object", path, v)
		}
		return m
	}
	arr := func(v any, path string) []any {
		t.Helper()
		a, ok := v.([]any)
		if !ok || len(a) == 0 {
			t.Fatalf("%s: got %T %v, want a non-empty array", path, v, v)
		}
		return a
	}
	isInt := func(v any, path string) {
		t.Helper()
		n, ok := v.(json.Number)
		if _, err := n.Int64(); !ok || err != nil {
			t.Errorf("%s = %v: want an integer", path, v)
		}
	}
	isNum := func(v any, path string) {
		t.Helper()
		if _, ok := v.(json.Number); !ok {
			t.Errorf("%s = %v (%T): want a number", path, v, v)
		}
	}
	if doc["schema_version"] != "1.0" || doc["benchmark_id"] != "bid" {
		t.Errorf("schema_version %v benchmark_id %v", doc["schema_version"], doc["benchmark_id"])
	}
	obj(doc["input_config"], "input_config")
	sum := obj(doc["summary"], "summary")
	arr(sum["endpoints_configured"], "endpoints_configured")
	arr(sum["endpoints_successful"], "endpoints_successful")
	for _, k := range []string{"start_time", "end_time"} {
		if s, _ := sum[k].(string); len(s) != len("2006-01-02T15:04:05.000000") {
			t.Errorf("summary.%s = %v: want naive ISO with microseconds", k, sum[k])
		}
	}
	info := obj(obj(sum["endpoint_info"], "endpoint_info")[r.url()], "endpoint_info[url]")
	for _, k := range []string{"total_fetches", "unique_updates", "first_fetch_ns", "last_fetch_ns", "first_update_ns", "last_update_ns"} {
		isInt(info[k], "endpoint_info."+k)
	}
	for _, k := range []string{"avg_fetch_latency_ms", "avg_update_interval_ms", "median_update_interval_ms", "duration_seconds"} {
		isNum(info[k], "endpoint_info."+k)
	}
	if info["first_update_ns"].(json.Number).String() != itoa(int(t0.UnixNano())) {
		t.Errorf("first_update_ns %v, want the baseline scrape time %d", info["first_update_ns"], t0.UnixNano())
	}
	metrics := obj(doc["metrics"], "metrics")
	obj(doc["warmup_metrics"], "warmup_metrics")
	wantStats := map[string][]string{
		"vllm:prefix_cache_hits":           {"total", "rate", "rate_avg", "rate_min", "rate_max", "rate_std"},
		"vllm:kv_cache_usage_perc":         {"avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99"},
		"vllm:time_to_first_token_seconds": {"count", "sum", "avg", "count_rate", "sum_rate", "p1_estimate", "p50_estimate", "p99_estimate"},
	}
	wantSlice := map[string][]string{
		"vllm:prefix_cache_hits":           {"total", "rate"},
		"vllm:kv_cache_usage_perc":         {"avg", "min", "max"},
		"vllm:time_to_first_token_seconds": {"count", "sum", "avg"},
	}
	wantType := map[string]string{"vllm:prefix_cache_hits": "counter", "vllm:kv_cache_usage_perc": "gauge", "vllm:time_to_first_token_seconds": "histogram"}
	for name, keys := range wantStats {
		m := obj(metrics[name], name)
		if m["type"] != wantType[name] {
			t.Errorf("%s.type = %v", name, m["type"])
		}
		if _, ok := m["description"].(string); !ok {
			t.Errorf("%s.description missing", name)
		}
		ser := obj(arr(m["series"], name+".series")[0], name+".series[0]")
		if ser["endpoint_url"] != r.url() {
			t.Errorf("%s endpoint_url %v", name, ser["endpoint_url"])
		}
		obj(ser["labels"], name+".labels")
		st := obj(ser["stats"], name+".stats")
		for _, k := range keys {
			isNum(st[k], name+".stats."+k)
		}
		sl := obj(arr(ser["timeslices"], name+".timeslices")[0], name+".timeslices[0]")
		isInt(sl["start_ns"], name+".timeslices[0].start_ns")
		isInt(sl["end_ns"], name+".timeslices[0].end_ns")
		for _, k := range wantSlice[name] {
			isNum(sl[k], name+".timeslices[0]."+k)
		}
		if name == "vllm:time_to_first_token_seconds" {
			isInt(obj(ser["buckets"], "buckets")["+Inf"], "buckets.+Inf")
		}
	}
}

func TestCSVLayout(t *testing.T) {
	t.Parallel()
	r := newRig(t, vllmPage)
	s := New(Config{URLs: []string{r.url()}, SliceDuration: time.Second, Clock: r.clock})
	collect(t, r, s, 17)
	var b bytes.Buffer
	if err := WriteCSV(&b, s.Snapshot()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if lines[0] != "# AIPerf Server Metrics Export (CSV)" || lines[2] != "# schema_version: 1.0" || lines[5] != "#" {
		t.Errorf("comment header:\n%s", strings.Join(lines[:6], "\n"))
	}
	host := strings.TrimPrefix(r.srv.URL, "http://")
	var headers []string
	for _, l := range lines[6:] {
		if strings.HasPrefix(l, "Endpoint,") {
			headers = append(headers, l)
		}
	}
	want := []string{
		"Endpoint,Type,Metric,Unit,avg,min,max,std,p1,p5,p10,p25,p50,p75,p90,p95,p99,engine,model_name,Description",
		"Endpoint,Type,Metric,Unit,total,rate,rate_avg,rate_min,rate_max,rate_std,engine,model_name,Description",
		"Endpoint,Type,Metric,Unit,count,count_rate,sum,sum_rate,avg,p1_estimate,p5_estimate,p10_estimate,p25_estimate,p50_estimate,p75_estimate,p90_estimate,p95_estimate,p99_estimate,engine,Description,buckets",
		"Endpoint,Metric,Key,Value,Description",
	}
	if strings.Join(headers, "\n") != strings.Join(want, "\n") {
		t.Errorf("section headers:\n%s\nwant:\n%s", strings.Join(headers, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range []string{
		host + ",counter,vllm:prefix_cache_queries,tokens,1200,400,",
		host + ",histogram,vllm:time_to_first_token_seconds,seconds,48,16,18,6,0.3750,",
		"0.1=12;0.5=36;1=48;+Inf=48",
		host + ",vllm:cache_config_info,block_size,16,",
	} {
		if !strings.Contains(b.String(), l) {
			t.Errorf("CSV lacks %q:\n%s", l, b.String())
		}
	}
}

func TestNoSlicesWhenSliceDurationZero(t *testing.T) {
	t.Parallel()
	r := newRig(t, vllmPage)
	s := New(Config{URLs: []string{r.url()}, Clock: r.clock})
	collect(t, r, s, 17)
	dir := t.TempDir()
	d, err := s.Export(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !d.KVUsageMeanActiveValid || !near(d.KVUsageMeanActive, (0.4375+0.4)/2) {
		t.Errorf("derived KV mean without written slices %v", d.KVUsageMeanActive)
	}
	b, _ := os.ReadFile(filepath.Join(dir, JSONFile))
	if bytes.Contains(b, []byte("timeslices")) {
		t.Error("timeslices written although SliceDuration is 0")
	}
}

func TestLive(t *testing.T) {
	t.Parallel()
	r := newRig(t, vllmPage)
	s := New(Config{URLs: []string{r.url()}, Clock: r.clock})
	if lf := s.Live(); lf.GPUPrefixHitRateValid || lf.KVUsageValid {
		t.Errorf("live figures before any scrape: %+v", lf)
	}
	r.k.Store(4)
	s.Baseline(t.Context())
	s.MarkProfilingStart(r.at(4))
	r.k.Store(6)
	s.Scrape(t.Context())
	lf := s.Live()
	if !lf.GPUPrefixHitRateValid || !near(lf.GPUPrefixHitRate, 0.375) || !near(lf.ExternalHitRate, 0.75) {
		t.Errorf("live hit rates %+v", lf)
	}
	if !lf.KVUsageValid || !near(lf.KVUsage, (0.2+0.9)/2) || lf.Running != 6 || !lf.QueueValid || lf.Scrapes != 2 {
		t.Errorf("live kv/queue %+v, want kv 0.55 (mean of engines), running 6 (sum)", lf)
	}
}

func TestURLsFrom(t *testing.T) {
	t.Parallel()
	env := map[string]string{EnvURLs: "http://10.0.0.2:8000/metrics, 10.0.0.3:9000"}
	for _, c := range []struct {
		name  string
		inf   string
		extra []string
		env   func(string) string
		want  string
	}{
		{"inference URL path dropped", "http://localhost:8000/v1", nil, nil, "http://localhost:8000/metrics"},
		{"extra and env, deduped", "http://localhost:8000", []string{"localhost:8000", "http://h:1/custom"},
			func(k string) string { return env[k] },
			"http://localhost:8000/metrics http://h:1/custom http://10.0.0.2:8000/metrics http://10.0.0.3:9000/metrics"},
		{"sim scheme contributes nothing", "sim://", []string{"a:1,b:2"}, nil, "http://a:1/metrics http://b:2/metrics"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := strings.Join(URLsFrom(c.inf, c.extra, c.env), " "); got != c.want {
				t.Errorf("got %q want %q", got, c.want)
			}
		})
	}
}

func TestIntervalFrom(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    string
		want time.Duration
		err  bool
	}{{"", DefaultInterval, false}, {"0.5", 500 * time.Millisecond, false}, {"0", 0, true}, {"fast", 0, true}} {
		got, err := IntervalFrom(func(string) string { return c.v })
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%q: got %v %v", c.v, got, err)
		}
	}
}

func TestUntypedTotalIsCounter(t *testing.T) {
	t.Parallel()
	fams, err := newParser().parse([]byte("vllm:prefix_cache_hits_total{engine=\"0\"} 5\nfoo 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != 2 || fams[1].name != "vllm:prefix_cache_hits" || fams[1].typ != typeCounter || fams[0].typ != typeUnknown {
		t.Errorf("families %+v", fams)
	}
}

func TestBucketQuantile(t *testing.T) {
	t.Parallel()
	les := []float64{0.1, 0.5, 1, math.Inf(1)}
	for _, c := range []struct {
		q    float64
		cum  []float64
		want float64
	}{
		{0.5, []float64{13, 39, 52, 52}, 0.3},
		{0.1, []float64{13, 39, 52, 52}, 0.1 * 5.2 / 13},
		{0.99, []float64{0, 0, 0, 10}, 1}, // all in +Inf: largest finite bound
	} {
		if got := bucketQuantile(c.q, les, c.cum); !near(got, c.want) {
			t.Errorf("q%v %v = %v want %v", c.q, c.cum, got, c.want)
		}
	}
}
