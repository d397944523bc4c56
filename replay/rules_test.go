package replay

import (
	"context"
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/timing"
)

// TestSystemIdleCapBarrier: the v1.0 system idle cap counts a timer that
// fired into a replay barrier as idle, through the engine against a
// zero-latency simulator (the core's own test, with the same trace at a
// scale of 1 s, is timing's TestRuleSystemIdleBarrier). The scale here is
// 20 ms per recorded second, the cap 200 ms (10 s).
func TestSystemIdleCapBarrier(t *testing.T) {
	const u = 0.02 // seconds per recorded second
	r := func(start, api float64, ids ...uint32) dataset.Request {
		return dataset.Request{T: start * u, APITime: api * u, ThinkTime: math.NaN(), In: 100, Out: 2, HashIDs: ids}
	}
	// The root's main chain (hash ids 1, 2, …) and a flat chain (9, 8,
	// …), recorded R0 0–30, F0 2–3, F1 20–21, R1 35–36, F2 40–41: F is
	// spawned when R0 is sent (F0 starts before R0 ends); R1 waits for F1
	// (a replay barrier), F2 for R1.
	tr := dataset.Trace{ID: "H", Requests: []dataset.Request{
		r(0, 30, 1, 2), r(2, 1, 9), r(20, 1, 9, 8), r(35, 1, 1, 2, 3), r(40, 1, 9, 8, 7),
	}}
	srv := startZeroSim(t)
	sink := &memSink{}
	cfg := testConfig(t, srv.URL, []dataset.Trace{tr}, sink, nil)
	cfg.Generation = timing.V10
	cfg.Concurrency = 1
	cfg.StartMinRatio, cfg.StartMaxRatio = 0, 0 // t* at the start: no primer
	cfg.SystemIdleGapCap = time.Duration(10 * u * float64(time.Second))
	cfg.BenchmarkDuration = 600 * time.Millisecond
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// With every answer at once (in recorded seconds): R0 at 0, F0 at 2;
	// idle from 2; R1's timer (0 + 5) fires into its barrier at 5, which
	// leaves the cap 10 − 3 = 7 s, so F1 (due 2 + 17 = 19) goes at 12, R1
	// right after it; idle from 12, F2 (due 12 + 19 = 31) goes at 22.
	// Without the rule F1 and R1 would go at 19 and F2 at 29.
	want := map[string]float64{"H/0": 0, "H::fa:000/0": 2, "H::fa:000/1": 12, "H/1": 12, "H::fa:000/2": 22}
	first := map[string]int64{}
	recs := sink.records()
	sort.Slice(recs, func(i, j int) bool { return recs[i].CreditIssuedNs < recs[j].CreditIssuedNs })
	for _, rec := range recs {
		if rec.Phase != metrics.PhaseProfiling {
			continue
		}
		k := fmt.Sprintf("%s/%d", rec.ConversationID, rec.TurnIndex)
		if _, ok := first[k]; !ok {
			first[k] = rec.CreditIssuedNs
		}
	}
	start := res.ProfilingStart.UnixNano()
	for k, sec := range want {
		ns, ok := first[k]
		if !ok {
			t.Fatalf("%s was never sent in profiling (sent: %v)", k, first)
		}
		got := time.Duration(ns - start)
		w := time.Duration(sec * u * float64(time.Second))
		if d := got - w; d < -20*time.Millisecond || d > 60*time.Millisecond {
			t.Errorf("%s sent %v after profiling started, want %v (%g recorded seconds)", k, got, w, sec)
		}
	}
	if res.Schedule.SystemIdleJumps == 0 {
		t.Errorf("no system idle jump recorded")
	}
}
