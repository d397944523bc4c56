package timing

import (
	"fmt"
	"testing"
	"time"
)

func plans10(traces ...Trace) []*Plan {
	out := make([]*Plan, len(traces))
	for i := range traces {
		out[i] = BuildPlan(&traces[i], i, PlanOptions{Generation: V10})
	}
	return out
}

// v10 is a v1.0 config with t* in the middle of every trace.
func v10(lanes int, d time.Duration) Config {
	return Config{Generation: V10, Lanes: lanes, StartMinRatio: 0.5, StartMaxRatio: 0.5, Duration: d, SystemIdleCap: DefaultSystemIdleCap}
}

// TestV10SpreadPrimers: each lane's primer is the turn before its first
// turn at or after t*, sent with one output token; they are spread so
// every trajectory reaches t* together: A's primer is 5 s before its t*,
// B's 42 s (capped at the 10 s system idle cap), so B's goes first and A's
// 5 s later. Profiling then starts every stream at its distance after t*,
// less the smallest such distance of the run: A's next turn (5 s after t*)
// at once, B's (50 s) 45 s later.
func TestV10SpreadPrimers(t *testing.T) {
	t.Parallel()
	a := traceOf("A", []Request{req(0, 1), req(10, 1), req(20, 1), req(30, 1)})
	b := traceOf("B", []Request{req(0, 1), req(4, 1), req(8, 1), req(100, 1)})
	sc := mustSchedule(t, v10(2, 10*s), plans10(a, b))
	log, prof := drive(t, sc, t0, constServer(s))
	checkSchedule(t, log, `
L1 B s0.2 @0 warm new#1 tok1
L0 A s0.1 @5 warm new#0 tok1
L0 A s0.2 @6
`)
	if !prof.Equal(at(6*s)) || sc.PrimerRamp() != 5*s {
		t.Errorf("profiling at %s, ramp %v; want 6 and 5s (from B's primer to A's)", fmtT(prof), sc.PrimerRamp())
	}
	// Burst: both primers at once, each lane aligned on its own first turn.
	sc = mustSchedule(t, func() Config { c := v10(2, 10*s); c.BurstPhaseStarts = true; return c }(), plans10(a, b))
	log, _ = drive(t, sc, t0, constServer(s))
	checkSchedule(t, log, `
L0 A s0.1 @0 warm new#0 tok1
L1 B s0.2 @0 warm new#1 tok1
L0 A s0.2 @1
L1 B s0.3 @1
L1 B s0.0 @2 new#3 pass1
L1 B s0.1 @6
L1 B s0.2 @10
`)
}

// TestV10SystemIdleCap: when nothing is in flight anywhere and the next
// timer is more than the cap away, every pending timer of every lane moves
// earlier by the excess, keeping their order and spacing.
func TestV10SystemIdleCap(t *testing.T) {
	t.Parallel()
	a := traceOf("A", []Request{req(0, 1), req(1, 1), req(100, 1)})
	b := traceOf("B", []Request{req(0, 1), req(1, 1), req(52, 1)})
	cfg := Config{Generation: withTurnStart(V10), Lanes: 2, Duration: 200 * s, SystemIdleCap: 10 * s}
	sc := mustSchedule(t, cfg, plans10(a, b))
	log, _ := drive(t, sc, t0, constServer(s))
	// Warmup turn 0 (k_i = 0), profiling from 1: turn 1 at once on both
	// lanes, done at 2; turn 2 is due 98 s (A) and 50 s (B) later: B's at
	// 12 (everything shifted by 40), A's then at 60. B's tree then drains
	// and lane 1 recycles to B again (its first recycle takes sampler
	// position Lanes + 1 = 3, B); when it is idle again at 15, the next
	// timer (lane 0's, at 60) is 45 s away: shifted by 35 to 25, lane 1's
	// (at 65) by the same to 30. Lane 0 then recycles to A (position 2).
	checkSchedule(t, log[:12], `
L0 A s0.0 @0 warm new#0 tok1
L1 B s0.0 @0 warm new#1 tok1
L0 A s0.1 @1
L1 B s0.1 @1
L1 B s0.2 @12
L1 B s0.0 @13 new#3 pass1
L1 B s0.1 @14
L0 A s0.2 @25
L0 A s0.0 @26 new#2 pass1
L0 A s0.1 @27
L1 B s0.2 @30
L1 A s0.0 @31 new#5 pass2
`)
	if st := sc.Stats(); st.SystemIdleJumps < 3 || st.SystemIdleSkipped < 115*s {
		t.Errorf("Stats = %+v, want at least the 3 jumps (40 s + 35 s + 40 s) of the schedule", st)
	}
}

// TestV10TraceIdleCap: a tree idle for the trace cap has its pending
// timers pulled in so the next fires the cap after its last response.
func TestV10TraceIdleCap(t *testing.T) {
	t.Parallel()
	a := traceOf("A", []Request{req(0, 1), req(1, 1), req(100, 1), req(101, 1)})
	cfg := Config{Generation: withTurnStart(V10), Lanes: 1, Duration: 100 * s, TraceIdleCap: 20 * s}
	sc := mustSchedule(t, cfg, plans10(a))
	log, _ := drive(t, sc, t0, constServer(s))
	// Turn 2 is due 98 s after turn 1's response: pulled in to 20 s.
	checkSchedule(t, log[:6], `
L0 A s0.0 @0 warm new#0 tok1
L0 A s0.1 @1
L0 A s0.2 @22
L0 A s0.3 @23
L0 A s0.0 @24 new#1 pass1
L0 A s0.1 @25
`)
	// One jump of 78 s per play of the trace, the last one (at 98) past
	// the deadline.
	if st := sc.Stats(); st.TraceIdleJumps != 5 || st.TraceIdleSkipped != 5*78*s {
		t.Errorf("Stats = %+v, want 5 jumps of 78 s", st)
	}
}

// TestV10RecycleSampler: a drained tree's lane takes the next root of its
// own walk of the sampler's sequence, which continues after the roots the
// lanes started with.
func TestV10RecycleSampler(t *testing.T) {
	t.Parallel()
	var traces []Trace
	for _, id := range []string{"A", "B", "C"} {
		traces = append(traces, traceOf(id, []Request{req(0, 1), req(1, 1)}))
	}
	cfg := Config{Generation: withTurnStart(V10), Lanes: 2, Duration: 6 * s}
	sc := mustSchedule(t, cfg, plans10(traces...))
	log, _ := drive(t, sc, t0, constServer(s))
	var order []string
	for _, x := range log {
		if x.Phase == Profiling && x.Turn == 0 {
			order = append(order, fmt.Sprintf("L%d:%s", x.Lane, x.Plan.TraceID))
		}
	}
	// Lane i's k-th recycle takes position Lanes + i + k: lane 0 walks
	// C A B (positions 2, 3, 4), lane 1 A B C (3, 4, 5).
	if got := fmt.Sprint(order); got != "[L0:C L1:A L0:A L1:B L0:B L1:C]" {
		t.Fatalf("recycle order %s, want [L0:C L1:A L0:A L1:B L0:B L1:C] (each lane walking the pool from its own position)", got)
	}
}

// TestV10AcceleratedWarmup: after the primers, every lane replays its tree
// forward with no delays and one output token until it has released R more
// requests; children count, a drained tree recycles; then the lane stops,
// and profiling resumes every stream from where the warmup left it.
func TestV10AcceleratedWarmup(t *testing.T) {
	t.Parallel()
	tr := traceOf("T",
		[]Request{req(0, 1), req(10, 1), req(20, 1), req(40, 1), req(60, 1)},
		sub("k", 2, 11, 8, req(12, 1), req(15, 1)))
	cfg := Config{Generation: V10, Lanes: 1, StartMinRatio: 0, StartMaxRatio: 0, Duration: 100 * s, WarmupRequestsPerLane: 4}
	sc := mustSchedule(t, cfg, plans10(tr))
	if got := sc.WarmupSends(); got != 4 {
		t.Fatalf("WarmupSends = %d, want 0 primers + 1 lane × 4", got)
	}
	log, prof := drive(t, sc, t0, constServer(s))
	// t* = 0: no primer (the root's first turn is at t*). Accelerated:
	// turn 0, 1 (spawns the child), the child's two turns and the root's
	// turn 2 (joined to the child) would follow; the quota of 4 stops the
	// lane after turn 0, 1 and the child's turns. At the handoff the
	// root's turn 2 is due its distance from t* (20 s) less the smallest
	// distance of the run (20 s): at once. Later turns follow their
	// end-to-start gaps; the recycled tree's child starts 1 s (its recorded
	// offset from the branch start) after turn 1 completes.
	checkSchedule(t, log, `
L0 T s0.0 @0 warm new#0 tok1
L0 T s0.1 @1 warm tok1
L0 T s1.0 @2 warm new#1 tok1
L0 T s1.1 @3 warm tok1
L0 T s0.2 @4
L0 T s0.3 @24
L0 T s0.4 @44
L0 T s0.0 @45 new#2 pass1
L0 T s0.1 @55
L0 T s1.0 @57 new#3 pass1
L0 T s1.1 @60
L0 T s0.2 @65
L0 T s0.3 @85
`)
	if !prof.Equal(at(4 * s)) {
		t.Errorf("profiling started at %s, want 4", fmtT(prof))
	}
	if st := sc.Stats(); st.Sent[0] != 4 {
		t.Errorf("warmup sends %d, want exactly 4 (primers + lanes × R)", st.Sent[0])
	}
}

// TestGivenChainLayout: the plan follows the chain layouts it is given.
// The root keeps the main chain's requests in its order; each other
// top-level chain is a flat stream with its label and declared prefix;
// a subagent's chains are its streams; the preamble and the seams are
// counted; a subagent without a layout is one stream in start order; a
// generation that does not split ignores the layouts.
func TestGivenChainLayout(t *testing.T) {
	t.Parallel()
	tr := traceOf("L", []Request{req(0, 1), req(2, 1), req(3, 1), req(5, 1)},
		sub("w", 1, 2.5, 10, req(4, 1), req(2.5, 1), req(6, 1)),
		sub("x", 2, 3.5, 10, req(7, 1), req(3.5, 1)))
	tr.ToolTokens, tr.SystemTokens = 7, 9
	tr.Chains = &Chains{Main: []int{0, 1, 3}, Workers: []Chain{{Label: "aux:000", Reqs: []int{2}, ToolTokens: 7}}, Preamble: true, Seams: 2}
	tr.Subagents[0].Chains = &Chains{Main: []int{1, 0}, Workers: []Chain{{Label: "fa:000", Reqs: []int{2}}}, Seams: 1}
	p := plans10(tr)[0]
	var got []string
	for _, st := range p.Streams {
		var inner []int
		for _, tn := range st.Turns {
			inner = append(inner, tn.Inner)
		}
		got = append(got, fmt.Sprintf("%s %s %d/%d %v", st.ConvID, st.Kind, st.ToolTokens, st.SystemTokens, inner))
	}
	want := "[L weka_main 7/9 [0 1 3] L::sa:w weka_subagent 0/0 [1 0] L::sa:w:fa:000 weka_subagent 0/0 [2] L::sa:x weka_subagent 0/0 [1 0] L::aux:000 weka_flat 7/0 [2]]"
	if fmt.Sprint(got) != want || !p.Preamble || p.Seams != 2 || p.SubagentSeams != 1 {
		t.Fatalf("streams %v, preamble %v, seams %d/%d;\nwant %s, preamble, seams 2/1", got, p.Preamble, p.Seams, p.SubagentSeams, want)
	}
	p3 := plansOf(V03, tr)[0]
	if len(p3.Streams) != 3 || len(p3.Streams[0].Turns) != 4 || p3.Preamble || p3.Seams != 0 {
		t.Fatalf("v0.3 plan %s: want the root's 4 requests and one stream per subagent, no chains", describePlan(p3))
	}
}
