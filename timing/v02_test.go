package timing

import (
	"fmt"
	"math"
	"testing"
	"time"
)

var nan = math.NaN()

// parentTrace builds a trace of parent requests whose think time before
// turn k is gaps[k-1] (start times accumulate the gaps).
func parentTrace(id string, gaps ...time.Duration) Trace {
	tr := Trace{ID: id}
	tm := 0.0
	tr.Requests = append(tr.Requests, Request{T: 0, APITime: nan, ThinkTime: nan})
	for _, g := range gaps {
		tm += g.Seconds()
		tr.Requests = append(tr.Requests, Request{T: tm, APITime: nan, ThinkTime: g.Seconds()})
	}
	return tr
}

func plansOf(gen Generation, traces ...Trace) []*Plan {
	out := make([]*Plan, len(traces))
	for i := range traces {
		out[i] = BuildPlan(&traces[i], i, PlanOptions{Generation: gen, InterTurnDelayCap: DefaultInterTurnDelayCap, IdleGapCap: DefaultV03IdleGapCap})
	}
	return out
}

func mustSchedule(t testing.TB, cfg Config, plans []*Plan) *Schedule {
	t.Helper()
	sc, err := New(cfg, plans)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// fixedK is a v0.2 config whose start turn is exactly int(0.5·n)
// (n == 2 ⇒ 0).
func fixedK(lanes int, d time.Duration) Config {
	return Config{Generation: V02, Lanes: lanes, StartMinRatio: 0.5, StartMaxRatio: 0.5, Duration: d}
}

func TestSampleStartTurnGolden(t *testing.T) {
	t.Parallel()
	// Pinned draws for seed 42, ratios 0.25/0.75: a change here changes
	// every run's trajectories and must be deliberate.
	for _, c := range []struct {
		id      string
		lane, n int
		want    int
	}{
		{"trace-a", 0, 10, 7},
		{"trace-a", 1, 10, 4},
		{"trace-a", 2, 10, 7},
		{"trace-b", 0, 40, 23},
		{"trace-b", 7, 40, 21},
		{"c", 3, 3, 1},
		{"c", 0, 4, 2},
		{"long", 5, 200, 144},
	} {
		if got := SampleStartTurn(42, c.id, c.lane, c.n, 0.25, 0.75); got != c.want {
			t.Errorf("SampleStartTurn(42, %q, lane %d, n %d) = %d, want %d", c.id, c.lane, c.n, got, c.want)
		}
	}
}

func TestSampleStartTurnBounds(t *testing.T) {
	t.Parallel()
	for _, r := range []struct{ lo, hi float64 }{{0.25, 0.75}, {0, 1}, {0, 0.7}, {0.5, 0.5}, {0.9, 1}, {1, 1}, {0, 0}} {
		for n := 0; n <= 120; n++ {
			kmin := min(int(r.lo*float64(n)), n-2)
			kmax := min(int(r.hi*float64(n)), n-2)
			if kmin > kmax {
				kmin = kmax
			}
			seen := map[int]bool{}
			for lane := 0; lane < 60; lane++ {
				k := SampleStartTurn(7, "t", lane, n, r.lo, r.hi)
				switch {
				case n <= 2:
					if k != 0 {
						t.Fatalf("n=%d ratios %v: k=%d, want 0", n, r, k)
					}
				case k < kmin || k > kmax || k > n-2:
					t.Fatalf("n=%d ratios %v lane %d: k=%d outside [%d,%d]", n, r, lane, k, kmin, kmax)
				}
				seen[k] = true
			}
			if n > 2 && kmax-kmin < 4 && len(seen) != kmax-kmin+1 {
				t.Errorf("n=%d ratios %v: 60 lanes drew only %v from [%d,%d]", n, r, seen, kmin, kmax)
			}
		}
	}
}

// TestV02Delays pins the v0.2 delay rule: think_time when recorded, else
// the start difference; clamped at 0 and at the 60 s cap; 0 disables the
// cap; subagent requests are skipped and counted.
func TestV02Delays(t *testing.T) {
	t.Parallel()
	req := func(tm, think float64) Request { return Request{T: tm, ThinkTime: think, APITime: nan} }
	tr := Trace{ID: "tr", Requests: []Request{
		req(0, nan),      // turn 0: no delay
		req(10, 2.5),     // think_time wins over the 10 s start difference
		req(15, nan),     // no think_time: t difference 5 s
		req(200, 100),    // think_time 100 s capped at 60 s
		req(190, nan),    // negative t difference clamped to 0
		req(191, -3),     // negative think_time clamped to 0
		req(nan, nan),    // both missing: 0
		req(300, 0.0001), // sub-millisecond kept exactly
	}, Subagents: []Subagent{{After: 1, T: 11, Requests: []Request{req(11, 0), req(12, 0)}}}}
	p := BuildPlan(&tr, 0, PlanOptions{Generation: V02, InterTurnDelayCap: DefaultInterTurnDelayCap})
	want := []time.Duration{0, 2500 * time.Millisecond, 5 * s, 60 * s, 0, 0, 0, 100 * time.Microsecond}
	var got []time.Duration
	for _, tn := range p.Streams[0].Turns {
		got = append(got, tn.Delay)
	}
	if len(p.Streams) != 1 || fmt.Sprint(got) != fmt.Sprint(want) || p.SkippedRequests != 2 {
		t.Fatalf("v0.2 plan: %d streams, delays %v, skipped %d; want 1 stream, %v, 2 skipped", len(p.Streams), got, p.SkippedRequests, want)
	}
	if oi := p.Streams[0].Turns[1].OuterIdx; oi != 2 {
		t.Errorf("turn 1 after a subagent entry: outer index %d, want 2", oi)
	}
	uncapped := BuildPlan(&tr, 0, PlanOptions{Generation: V02})
	if d := uncapped.Streams[0].Turns[3].Delay; d != 100*s {
		t.Errorf("cap 0: delay %v, want the uncapped 100s", d)
	}
}

// TestV02Schedule is the legacy schedule end to end on a fake clock: the
// start turns as warmup, the barrier, k_i+1 at once, each later turn its
// recorded gap after the previous response, the FIFO recycle (the
// finished trace to the tail, the first non-live entry taken), an
// overflow recycling at once, and the deadline.
func TestV02Schedule(t *testing.T) {
	t.Parallel()
	traces := []Trace{
		parentTrace("A", 5*s, 7*s),       // 3 turns, k=1
		parentTrace("B", 3*s),            // 2 turns, k=0
		parentTrace("C", 1*s, 2*s, 30*s), // 4 turns
		parentTrace("D"),                 // unusable
		parentTrace("E", 4*s),            // 2 turns
	}
	sc := mustSchedule(t, fixedK(2, 40*s), plansOf(V02, traces...))
	srv := func(snd Send) (time.Duration, Outcome) {
		if snd.Plan.TraceID == "E" && snd.Turn == 0 && snd.RecyclePass == 0 {
			return 3 * s, Outcome{Overflow: true}
		}
		return 1 * s, Outcome{}
	}
	log, prof := drive(t, sc, t0, srv)
	if !prof.Equal(at(1 * s)) {
		t.Fatalf("profiling started at %s, want 1 (after the warmup responses)", fmtT(prof))
	}
	// Both lanes finish their last turn at 2; lane 0 completes first and
	// takes the queue head C, lane 1 then E (the queue was [C E], each
	// finished trace goes to the tail). E overflows on its first turn
	// (pass 0), so lane 1 recycles at once to A. C's last turn is due at
	// 8+30 = 38, before the 40 s deadline; lane 1's A turn 2 would be due
	// at 45, past it.
	checkSchedule(t, log, `
L0 A s0.1 @0 warm new#0
L1 B s0.0 @0 warm new#1
L0 A s0.2 @1
L1 B s0.1 @1
L0 C s0.0 @2 new#2
L1 E s0.0 @2 new#3
L0 C s0.1 @4
L1 A s0.0 @5 new#5 pass1
L0 C s0.2 @7
L1 A s0.1 @11
L1 A s0.2 @19
L1 B s0.0 @20 new#7 pass1
L1 B s0.1 @24
L1 E s0.0 @25 new#9 pass1
L1 E s0.1 @30
L1 A s0.0 @31 new#11 pass2
L1 A s0.1 @37
L0 C s0.3 @38
L0 B s0.0 @39 new#4 pass2
`)
	st := sc.Stats()
	if st.Trees != 9 || st.Recycles != 7 || st.Overflows != 1 || st.LanesDone != 2 || st.Usable != 4 || st.Sent != [2]int{2, 17} {
		t.Errorf("Stats = %+v", st)
	}
}
