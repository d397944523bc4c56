package promexport

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentperf/agentperf/metrics"
)

// TestNamesFollowPrometheusConventions lints every metric with
// client_golang's promlint (units in the name, _total on counters, base
// units, help text).
func TestNamesFollowPrometheusConventions(t *testing.T) {
	t.Parallel()
	var tally metrics.Tally
	e := New(Options{Tally: &tally, Threshold: 0.1, Shard: "1/4"})
	e.Add(&metrics.Record{Phase: metrics.PhaseProfiling, CreditIssuedNs: 1e9, RequestStartNs: 1e9 + 2e6, FirstChunkNs: 1.1e9, SecondChunkNs: 1.12e9,
		LastChunkNs: 1.5e9, RequestEndNs: 1.5e9, ContentChunks: 10, Usage: &metrics.Usage{PromptTokens: 100, CompletionTokens: 10}})
	problems, err := testutil.GatherAndLint(e.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, Namespace+"_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
	// Every agentperf series carries the shard.
	mfs, err := e.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), Namespace+"_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			ok := false
			for _, l := range m.GetLabel() {
				ok = ok || (l.GetName() == "shard" && l.GetValue() == "1/4")
			}
			if !ok {
				t.Errorf("%s without shard=\"1/4\"", mf.GetName())
			}
		}
	}
}

func TestOutcomesAndPhase(t *testing.T) {
	t.Parallel()
	now := time.Unix(100, 0)
	e := New(Options{Clock: func() time.Time { return now }})
	for _, r := range []*metrics.Record{
		{Phase: metrics.PhaseWarmup},
		{Phase: metrics.PhaseProfiling, Error: &metrics.Error{Code: 500}},
		{Phase: metrics.PhaseProfiling, ContextOverflow: true, Error: &metrics.Error{Code: 400}},
		{Phase: metrics.PhaseProfiling, Cancelled: true},
	} {
		e.Add(r)
	}
	for _, c := range []struct {
		phase, outcome string
		want           float64
	}{{"warmup", "ok", 1}, {"profiling", "error", 1}, {"profiling", "context_overflow", 1}, {"profiling", "cancelled", 1}, {"profiling", "ok", 0}} {
		if got := testutil.ToFloat64(e.requests.WithLabelValues(c.phase, c.outcome)); got != c.want {
			t.Errorf("requests_total{%s,%s} = %v, want %v", c.phase, c.outcome, got, c.want)
		}
	}
	e.ProfilingStarted(now, now.Add(90*time.Second))
	now = now.Add(30 * time.Second)
	out, err := testutil.GatherAndCount(e.Registry(), "agentperf_profiling_time_left_seconds")
	if err != nil || out != 1 {
		t.Fatalf("%v %v", out, err)
	}
	if err := testutil.GatherAndCompare(e.Registry(), strings.NewReader(`
# HELP agentperf_profiling_time_left_seconds Seconds until the profiling deadline (0 before profiling starts and after it ends).
# TYPE agentperf_profiling_time_left_seconds gauge
agentperf_profiling_time_left_seconds 60
`), "agentperf_profiling_time_left_seconds"); err != nil {
		t.Error(err)
	}
	e.ProfilingEnded(now)
	if err := testutil.GatherAndCompare(e.Registry(), strings.NewReader(`
# HELP agentperf_phase The run's phase: 1 for the current one (starting, warmup, profiling, done), 0 for the others.
# TYPE agentperf_phase gauge
agentperf_phase{phase="done"} 1
agentperf_phase{phase="profiling"} 0
agentperf_phase{phase="starting"} 0
agentperf_phase{phase="warmup"} 0
`), "agentperf_phase"); err != nil {
		t.Error(err)
	}
}
