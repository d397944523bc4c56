package metrics

import (
	"math"
	"testing"
	"time"
)

// TestOccupancyByHand: achieved concurrency from hand-made records whose
// answer is worked out on paper (times in seconds from B; profiling is
// [5, 15)):
//
//	warmup   W1 [0, 4)  W2 [1, 3)  W3 [4.5, 6) (still in flight when profiling starts)
//	profiling P1 [5, 9)  P2 [6, 7)  P3 [8, 10)  P4 error [12, 13)  P5 cancelled [14, 17)
//	overflow  O [5, 15) (left out: rejected at once by a real server)
//
// Warmup [0, 5): 1 in flight for 1 s, 2 for 2 s, 1 for 1 s, 0 for 0.5 s,
// 1 for 0.5 s: 6.5 request-seconds over 5 s = 1.3, idle 0.5/5 = 0.1, at
// most 2, 3 requests.
// Profiling [5, 15): 2, 2, 1, 2, 1 over 5–10, none 10–12, 1 over 12–13,
// none 13–14, 1 over 14–15 (P5 clipped): 10 request-seconds over 10 s =
// 1.0, idle 3/10 = 0.3, at most 2 (W3 ends as P2 starts at 6: not 3), 6
// requests (W3 among them).
func TestOccupancyByHand(t *testing.T) {
	t.Parallel()
	B := time.Date(2026, 8, 12, 14, 0, 0, 0, time.UTC)
	ns := func(s float64) int64 { return B.UnixNano() + int64(s*1e9) }
	rec := func(ph Phase, s, e float64) *Record {
		return &Record{Phase: ph, RequestStartNs: ns(s), RequestEndNs: ns(e), FirstChunkNs: ns(s)}
	}
	a := NewAggregator(AggregatorOptions{})
	for _, r := range []*Record{
		rec(PhaseWarmup, 0, 4), rec(PhaseWarmup, 1, 3), rec(PhaseWarmup, 4.5, 6),
		rec(PhaseProfiling, 5, 9), rec(PhaseProfiling, 6, 7), rec(PhaseProfiling, 8, 10),
	} {
		a.Add(r)
	}
	failed := rec(PhaseProfiling, 12, 13)
	failed.Error = &Error{Code: 500, Message: "boom", Category: CategoryHTTP}
	cancelled := rec(PhaseProfiling, 14, 17)
	cancelled.Cancelled = true
	overflow := rec(PhaseProfiling, 5, 15)
	overflow.ContextOverflow, overflow.Error = true, &Error{Code: 400, Message: "maximum context length"}
	a.Add(failed)
	a.Add(cancelled)
	a.Add(overflow)
	s, err := a.Summary(RunInfo{StartTime: B.Add(-time.Minute), EndTime: B.Add(20 * time.Second),
		ProfilingStart: B.Add(5 * time.Second), ProfilingEnd: B.Add(15 * time.Second), Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	want := []Occupancy{
		{Phase: "warmup", StartNs: ns(0), EndNs: ns(5), MeanInFlight: 1.3, IdleShare: 0.1, MaxInFlight: 2, Requests: 3},
		{Phase: "profiling", StartNs: ns(5), EndNs: ns(15), MeanInFlight: 1.0, IdleShare: 0.3, MaxInFlight: 2, Requests: 6},
	}
	if len(s.Occupancy) != len(want) {
		t.Fatalf("occupancy %+v, want %+v", s.Occupancy, want)
	}
	for i, w := range want {
		g := s.Occupancy[i]
		if g.Phase != w.Phase || g.StartNs != w.StartNs || g.EndNs != w.EndNs || g.MaxInFlight != w.MaxInFlight || g.Requests != w.Requests ||
			math.Abs(g.MeanInFlight-w.MeanInFlight) > 1e-9 || math.Abs(g.IdleShare-w.IdleShare) > 1e-9 {
			t.Errorf("%s: %+v, want %+v", w.Phase, g, w)
		}
	}
	ac, _ := s.metadata().Agentperf["achieved_concurrency"].(map[string]any)
	prof, _ := ac["profiling"].(map[string]any)
	if prof == nil || prof["mean_requests_in_flight"] != s.Occupancy[1].MeanInFlight || prof["idle_share"] != s.Occupancy[1].IdleShare ||
		prof["window_s"] != 10.0 || ac["method"] != OccupancyMethod {
		t.Errorf("metadata.agentperf.achieved_concurrency = %v", ac)
	}
}

// TestOccupancyWithoutWindow: records alone (no profiling window known)
// take the profiling records' span; no warmup record, no warmup entry.
func TestOccupancyWithoutWindow(t *testing.T) {
	t.Parallel()
	a := NewAggregator(AggregatorOptions{})
	for _, se := range [][2]int64{{10e9, 12e9}, {14e9, 16e9}} {
		a.Add(&Record{Phase: PhaseProfiling, RequestStartNs: se[0], RequestEndNs: se[1], FirstChunkNs: se[0]})
	}
	s, err := a.Summary(RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Occupancy) != 1 || s.Occupancy[0].Phase != "profiling" || s.Occupancy[0].MeanInFlight != 4.0/6 || s.Occupancy[0].IdleShare != 2.0/6 {
		t.Errorf("occupancy %+v, want profiling over [10 s, 16 s): mean 4/6, idle 2/6", s.Occupancy)
	}
}
