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
	h := dataset.Trace{ID: "H", Requests: []dataset.Request{
		r(0, 30, 1, 2), r(2, 1, 9), r(20, 1, 9, 8), r(35, 1, 1, 2, 3), r(40, 1, 9, 8, 7),
	}}
	// G, on a second lane: G0 0–1, G1 at 19 (due 18 s after G0 ends).
	g := dataset.Trace{ID: "G", Requests: []dataset.Request{r(0, 1, 5), r(19, 1, 5, 6)}}
	for _, tc := range []struct {
		name   string
		corpus []dataset.Trace
		// want: recorded seconds after profiling started, per
		// "conversation/turn", of the first play of each tree.
		want map[string]float64
	}{
		// Every answer comes at once (in recorded seconds): R0 at 0, F0 at
		// 2; idle from 2; R1's timer (0 + 5) fires into its barrier at 5,
		// which leaves the cap 10 − 3 = 7 s, so F1 (due 2 + 17 = 19) goes
		// at 12, R1 right after it; idle from 12, F2 (due 12 + 19 = 31)
		// goes at 22. Without the rule F1 and R1 would go at 19, F2 at 29.
		{"one lane", []dataset.Trace{h},
			map[string]float64{"H/0": 0, "H::fa:000/0": 2, "H::fa:000/1": 12, "H/1": 12, "H::fa:000/2": 22}},
		// With G on lane 1 (G0 at 0, G1 due 18): at 5 the earliest timer
		// is G1 (18), so every timer moves 18 − 12 = 6 s earlier: G1 to
		// 12, F1 to 13 (R1 after it). Lane 1 sleeps on its timer: the
		// engine must wake it for the shift, or G1 goes at 18. G drains at
		// 12 and lane 1 takes G again (G0 at 12, G1 due 30); idle from 13,
		// the earliest timer is that G1 (30) before F2 (due 13 + 19 =
		// 32): both move 7 s, F2 to 25.
		{"two lanes", []dataset.Trace{h, g},
			map[string]float64{"H/0": 0, "H::fa:000/0": 2, "G/0": 0, "G/1": 12, "H::fa:000/1": 13, "H/1": 13, "H::fa:000/2": 25}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startZeroSim(t)
			sink := &memSink{}
			cfg := testConfig(t, srv.URL, tc.corpus, sink, nil)
			cfg.Generation = timing.V10
			cfg.Concurrency = len(tc.corpus)
			cfg.StartMinRatio, cfg.StartMaxRatio = 0, 0 // t* at the start: no primer
			cfg.SystemIdleGapCap = time.Duration(10 * u * float64(time.Second))
			cfg.BenchmarkDuration = 600 * time.Millisecond
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			first := map[string]int64{}
			recs := sink.records()
			sort.Slice(recs, func(i, j int) bool { return recs[i].RequestStartNs < recs[j].RequestStartNs })
			for _, rec := range recs {
				if rec.Phase != metrics.PhaseProfiling {
					continue
				}
				k := fmt.Sprintf("%s/%d", rec.ConversationID, rec.TurnIndex)
				if _, ok := first[k]; !ok {
					first[k] = rec.RequestStartNs
				}
			}
			// Tolerance: sends can be late by scheduling, and a late
			// response on one lane can make a shift larger, so another
			// lane's send a little earlier than on paper.
			start := res.ProfilingStart.UnixNano()
			for k, sec := range tc.want {
				ns, ok := first[k]
				if !ok {
					t.Fatalf("%s was never sent in profiling (sent: %v)", k, first)
				}
				got := time.Duration(ns - start)
				w := time.Duration(sec * u * float64(time.Second))
				if d := got - w; d < -40*time.Millisecond || d > 60*time.Millisecond {
					t.Errorf("%s sent %v after profiling started, want %v (%g recorded seconds)", k, got, w, sec)
				}
			}
			if res.Schedule.SystemIdleJumps == 0 {
				t.Errorf("no system idle jump recorded")
			}
		})
	}
}
