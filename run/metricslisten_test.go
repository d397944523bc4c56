package run_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/run"
)

// scrapeText parses one Prometheus text page.
func scrapeText(t *testing.T, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("the page is not Prometheus text: %v", err)
	}
	return mfs
}

// sample is the value of the series of name whose labels include want
// (counter, gauge, or a histogram's count); -1 when absent.
func sample(mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	mf := mfs[name]
	if mf == nil {
		return -1
	}
next:
	for _, m := range mf.GetMetric() {
		for k, v := range want {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return -1
}

// TestMetricsListenDuringARun scrapes --metrics-listen while a run goes
// on (live: the profiling phase, its time left, requests counted) and
// once more at the end, and checks the counters against the aggregates
// the run wrote.
func TestMetricsListenDuringARun(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3 s run")
	}
	t.Parallel()
	var log lockedBuffer
	s := run.NewSpec()
	s.Corpus.Traces = dataset.Synthesize(dataset.SynthOptions{Seed: 3, Traces: 12, MinTurns: 6, MaxTurns: 12, TimeScale: 0.01})
	s.Replay.URL, s.Replay.Models = "sim://?decode-base-ms=1&fault-500-every=7", []string{"demo"} // some failures, for the ratio
	s.Replay.Concurrency, s.Replay.Seed, s.Replay.Streaming = 6, 7, true
	s.Replay.BenchmarkDuration, s.Replay.TraceIdleGapCap = 3*time.Second, 10*time.Millisecond
	s.FailedRequestThreshold = 0.5
	s.MetricsListen = "127.0.0.1:0"
	s.OutputDir, s.NoPlot, s.Log = t.TempDir(), true, &log

	type seen struct{ profiling, timeLeft, requests float64 }
	live := make(chan seen, 1)
	go func() {
		re := regexp.MustCompile(`serving the run's figures at (http://\S+/metrics)`)
		var best seen
		defer func() { live <- best }()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			m := re.FindStringSubmatch(log.String())
			if m == nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			resp, err := http.Get(m[1])
			if err != nil {
				return // the run is over: the endpoint closed
			}
			mfs := scrapeText(t, resp.Body)
			resp.Body.Close()
			if sample(mfs, "agentperf_phase", map[string]string{"phase": "profiling"}) == 1 {
				best.profiling = 1
				best.timeLeft = max(best.timeLeft, sample(mfs, "agentperf_profiling_time_left_seconds", nil))
				best.requests = max(best.requests, sample(mfs, "agentperf_requests_total", map[string]string{"phase": "profiling", "outcome": "ok"}))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	out, err := run.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	got := <-live
	if got.profiling != 1 || !(got.timeLeft > 0 && got.timeLeft <= 3) || !(got.requests > 0) {
		t.Errorf("during the run: %+v, want the profiling phase with time left and requests counted; log:\n%s", got, log.String())
	}
	if out.Metrics == nil {
		t.Fatal("Outcome.Metrics is nil")
	}
	// The final state, through the same handler the endpoint served.
	srv := httptest.NewServer(out.Metrics.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	mfs := scrapeText(t, resp.Body)
	resp.Body.Close()

	agg, err := metrics.ReadAggregateFile(s.OutputDir)
	if err != nil {
		t.Fatal(err)
	}
	stat := func(tag string, count bool) float64 {
		st, ok := agg.Stat(tag)
		if !ok {
			t.Fatalf("aggregate has no %s", tag)
		}
		n := st.Avg
		if count {
			n = st.Count
		}
		f, _ := n.Float()
		return f
	}
	acc := agg.Metadata.RequestAccounting
	prof := func(outcome string) float64 {
		return sample(mfs, "agentperf_requests_total", map[string]string{"phase": "profiling", "outcome": outcome})
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"profiling ok = request_count", prof("ok"), stat("request_count", false)},
		{"profiling errors", prof("error"), float64(acc.ProfilingErrors)},
		{"warmup ok", sample(mfs, "agentperf_requests_total", map[string]string{"phase": "warmup", "outcome": "ok"}), float64(acc.WarmupOK)},
		{"TTFT observations", sample(mfs, "agentperf_time_to_first_token_seconds", map[string]string{"phase": "profiling"}), stat("time_to_first_token", true)},
		{"latency observations", sample(mfs, "agentperf_request_latency_seconds", map[string]string{"phase": "profiling"}), stat("request_latency", true)},
		{"ITL observations", sample(mfs, "agentperf_inter_token_latency_seconds", map[string]string{"phase": "profiling"}), stat("inter_token_latency", true)},
		{"output tokens = total_osl", sample(mfs, "agentperf_output_tokens_total", map[string]string{"phase": "profiling"}), stat("total_osl", false)},
		{"input tokens = total_isl", sample(mfs, "agentperf_input_tokens_total", map[string]string{"phase": "profiling"}), stat("total_isl", false)},
		{"in flight at the end", sample(mfs, "agentperf_requests_in_flight", nil), 0},
		{"phase done", sample(mfs, "agentperf_phase", map[string]string{"phase": "done"}), 1},
		{"threshold", sample(mfs, "agentperf_failed_request_threshold_ratio", nil), 0.5},
		{"failure ratio", sample(mfs, "agentperf_failed_request_ratio", nil), float64(acc.ProfilingErrors) / float64(acc.ProfilingOK+acc.ProfilingErrors)},
		{"profiling ok = accounting", prof("ok"), float64(acc.ProfilingOK)},
	} {
		if c.got != c.want {
			t.Errorf("%s: exported %v, aggregate %v", c.name, c.got, c.want)
		}
	}
	if acc.ProfilingErrors == 0 {
		t.Error("fixture: want failed profiling requests (the simulator fails every 7th)")
	}
	if sample(mfs, "agentperf_schedule_lateness_seconds", map[string]string{"phase": "profiling"}) <= 0 {
		t.Error("no scheduling lateness observed")
	}
	// After Run the endpoint is closed.
	re := regexp.MustCompile(`serving the run's figures at (http://\S+/metrics)`)
	if m := re.FindStringSubmatch(log.String()); m == nil {
		t.Fatal("the log does not say where the metrics are served")
	} else if _, err := http.Get(m[1]); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("the endpoint still answers after Run: %v", err)
	}
}
