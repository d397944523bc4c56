package timing

import (
	"testing"
	"time"
)

// One test per replay rule of the AgentX harness's v1.0 line
// (docs/replay.md, "v1.0 replay rules and their sources"), each on a
// hand-built trace whose send times are worked out in the comments and
// driven through the core on a fake clock.

// flatTrace is a trace whose top-level requests split into the root's main
// chain (main, indices into reqs) and one flat chain F (the others): the
// root and F share one replay-barrier scope.
func flatTrace(id string, reqs []Request, main, flat []int) Trace {
	tr := traceOf(id, reqs)
	tr.Chains = &Chains{Main: main, Workers: []Chain{{Label: "fa:000", Reqs: flat}}}
	return tr
}

// TestRulePrimerLead: a primer recorded lead before its lane's t* goes out
// maxLead − lead after the warmup starts, the lead capped at the system
// idle cap (10 s), so the ramp is at most 10 s; a primer without a
// recorded time has no lead and goes out at once; --burst-phase-starts
// sends every primer at once.
func TestRulePrimerLead(t *testing.T) {
	t.Parallel()
	// t* is the middle of each tree's span (ratios 0.5).
	// A: turns at 0, 10, 20, 30; t* = 15; next turn 2 (20), primer turn 1
	//    (10): lead 15 − 10 = 5 s.
	// B: turns at 0, 4, 8, 100; t* = 50; next turn 3 (100), primer turn 2
	//    (8): lead 42 s, capped at 10 s.
	// C: no recorded times: no snapshot, start turn k_i = int(0.5·3) = 1
	//    is the primer, with no lead.
	a := traceOf("A", []Request{req(0, 1), req(10, 1), req(20, 1), req(30, 1)})
	b := traceOf("B", []Request{req(0, 1), req(4, 1), req(8, 1), req(100, 1)})
	c := traceOf("C", []Request{req(nan, nan), req(nan, nan), req(nan, nan)})
	// maxLead = 10 (B): B's primer at 10 − 10 = 0, A's at 10 − 5 = 5, C's
	// at 0 (no lead). Each takes 1 s.
	sc := mustSchedule(t, v10(3, 100*s), plans10(a, b, c))
	log, prof := drive(t, sc, t0, constServer(s))
	checkSchedule(t, log[:3], `
L1 B s0.2 @0 warm new#1 tok1
L2 C s0.1 @0 warm new#2 tok1
L0 A s0.1 @5 warm new#0 tok1
`)
	// The ramp is from the first lead-bearing primer to the last: 10 − 5.
	if !prof.Equal(at(6*s)) || sc.PrimerRamp() != 5*s {
		t.Errorf("profiling at %s, ramp %v; want 6 (A's primer done) and 5s", fmtT(prof), sc.PrimerRamp())
	}
	// Without a system idle cap the lead is not capped: B's 42 s lead
	// sends its primer at 0 and A's at 42 − 5 = 37.
	cfg := v10(2, 100*s)
	cfg.SystemIdleCap = 0
	sc = mustSchedule(t, cfg, plans10(a, b))
	log, _ = drive(t, sc, t0, constServer(s))
	checkSchedule(t, log[:2], `
L1 B s0.2 @0 warm new#1 tok1
L0 A s0.1 @37 warm new#0 tok1
`)
	// Burst: every primer at once.
	cfg = v10(3, 100*s)
	cfg.BurstPhaseStarts = true
	sc = mustSchedule(t, cfg, plans10(a, b, c))
	log, _ = drive(t, sc, t0, constServer(s))
	checkSchedule(t, log[:3], `
L0 A s0.1 @0 warm new#0 tok1
L1 B s0.2 @0 warm new#1 tok1
L2 C s0.1 @0 warm new#2 tok1
`)
}

// TestRuleAdditiveQuota: the per-lane quota of the cache warmup counts
// only what follows the primers (a lane with two live streams sends two
// primers and then R more), and a turn the quota refuses is carried into
// the handoff, due at its distance from the tree's t*.
func TestRuleAdditiveQuota(t *testing.T) {
	t.Parallel()
	// Root turns at 0, 10, 20, 30, 40, 50 (1 s each); subagent k spawned
	// by turn 1 (10), recorded 11–36 with turns at 12, 22, 32, joined by
	// the first root turn at or after 36: turn 4 (40).
	tr := traceOf("T",
		[]Request{req(0, 1), req(10, 1), req(20, 1), req(30, 1), req(40, 1), req(50, 1)},
		sub("k", 2, 11, 25, req(12, 1), req(22, 1), req(32, 1)))
	cfg := v10(1, 100*s) // t* = 25
	cfg.WarmupRequestsPerLane = 2
	sc := mustSchedule(t, cfg, plans10(tr))
	// Primers: the root's turn 2 (20, lead 5) and the child's turn 1 (22,
	// lead 3): maxLead 5, so the root's at 0 and the child's at 2.
	// Cache warmup when both are back (3): the root's turn 3 and the
	// child's turn 2, both at once and both admitted (quota 2 → 0), back
	// at 4. The child is done, so the root's turn 4 (the join) is due at
	// 4, but the quota is spent: it is deferred, not sent. 2 primers + 2.
	if got := sc.WarmupSends(); got != 4 {
		t.Errorf("WarmupSends = %d, want 2 primers + 1 lane × 2", got)
	}
	log, prof := drive(t, sc, t0, constServer(s))
	// Handoff: the deferred turn 4 is due 40 − t* (25) = 15 s on the
	// tree's clock, less the run's smallest such distance (its own, 15):
	// at profiling start (4). Turn 5 then waits its end-to-start gap,
	// 50 − 41 = 9 s: at 5 + 9 = 14.
	checkSchedule(t, log, `
L0 T s0.2 @0 warm new#0 tok1
L0 T s1.1 @2 warm new#1 tok1
L0 T s0.3 @3 warm tok1
L0 T s1.2 @3 warm tok1
L0 T s0.4 @4
L0 T s0.5 @14
L0 T s0.0 @15 new#2 pass1
L0 T s0.1 @25
L0 T s1.0 @27 new#3 pass1
L0 T s0.2 @35
L0 T s1.1 @37
L0 T s0.3 @45
L0 T s1.2 @47
L0 T s0.4 @55
L0 T s0.5 @65
L0 T s0.0 @66 new#4 pass2
L0 T s0.1 @76
L0 T s1.0 @78 new#5 pass2
L0 T s0.2 @86
L0 T s1.1 @88
L0 T s0.3 @96
L0 T s1.2 @98
`)
	if !prof.Equal(at(4 * s)) {
		t.Errorf("profiling started at %s, want 4", fmtT(prof))
	}
	if st := sc.Stats(); st.Sent[Warmup] != 4 {
		t.Errorf("warmup sent %d, want 4 (the quota is additive to the primers)", st.Sent[Warmup])
	}
}

// TestRuleHandoffClock: at the handoff every stream's next turn is placed
// on its own tree's recorded clock (its distance from the tree's t*), and
// one phase-wide minimum is subtracted, so the first request goes out at
// once and every other keeps its distance; a lane whose tree drained as
// the warmup ended takes a new root at offset 0, which is then that
// minimum.
func TestRuleHandoffClock(t *testing.T) {
	t.Parallel()
	// No system idle cap, so that only the handoff moves timers (and the
	// primer leads are not capped).
	cfg := v10(2, 200*s)
	cfg.SystemIdleCap = 0
	cfg.WarmupRequestsPerLane = 1
	// A: turns at 0, 10, 17, 40; t* (ratio 0.5) = 20; next turn 3 (40),
	//    primer turn 2 (17, lead 3).
	// B: turns at 0, 20, 50, 100, 150; t* = 75; next turn 3 (100),
	//    primer turn 2 (50, lead 25).
	a := traceOf("A", []Request{req(0, 1), req(10, 1), req(17, 1), req(40, 1)})
	b := traceOf("B", []Request{req(0, 1), req(20, 1), req(50, 1), req(100, 1), req(150, 1)})
	sc := mustSchedule(t, cfg, plans10(a, b))
	log, prof := drive(t, sc, t0, constServer(s))
	// Primers: B's at 0 (maxLead 25 − 25), A's at 25 − 3 = 22, back at
	// 23. Cache warmup at 23, quota 1: A sends turn 3 (its last: the tree
	// drains), B sends turn 3; B's turn 4 is deferred. Back at 24.
	// Handoff: B's turn 4 is 150 − 75 = 75 s after B's t*. A's lane has no
	// live stream: it takes the next root of its sampler walk (A again:
	// position Lanes + 0 = 2 of A, B, A, …) at offset 0, so the phase-wide
	// minimum is 0 and B's turn 4 waits its whole 75 s: at 24 + 75 = 99.
	// The new A follows its end-to-start gaps: turn 1 at 25 + 9 = 34, turn
	// 2 at 35 + 6 = 41. (Had the empty lane not counted, the minimum would
	// have been 75 and B's turn 4 gone at once.)
	checkSchedule(t, log[:7], `
L1 B s0.2 @0 warm new#1 tok1
L0 A s0.2 @22 warm new#0 tok1
L0 A s0.3 @23 warm tok1
L1 B s0.3 @23 warm tok1
L0 A s0.0 @24 new#2 pass1
L0 A s0.1 @34
L0 A s0.2 @41
`)
	if !prof.Equal(at(24 * s)) {
		t.Fatalf("profiling started at %s, want 24", fmtT(prof))
	}
	firstOfLane1 := func(log []served) served {
		for _, x := range log {
			if x.Lane == 1 && x.Phase == Profiling {
				return x
			}
		}
		t.Fatal("lane 1 sent nothing in profiling")
		return served{}
	}
	if x := firstOfLane1(log); x.Turn != 4 || x.At.Sub(prof) != 75*s {
		t.Errorf("lane 1's first profiling send is %s, %v after profiling started; want B's deferred turn 4, 75s after (its distance from B's t*, less the minimum 0)", x, x.At.Sub(prof))
	}

	// Both lanes live at the handoff: A with a fifth turn at 45. A's span
	// is 0–45: t* = 22.5, next turn 3 (40), primer turn 2 (17, lead 5.5):
	// B's primer at 0, A's at 25 − 5.5 = 19.5, back at 20.5; the cache
	// warmup sends A's and B's turn 3, back at 21.5; both turn 4 are
	// deferred: A's 45 − 22.5 = 22.5 s after A's t*, B's 75 s after B's.
	// The minimum is 22.5: A's turn 4 at once (21.5), B's 75 − 22.5 = 52.5
	// s later (74).
	a5 := traceOf("A", []Request{req(0, 1), req(10, 1), req(17, 1), req(40, 1), req(45, 1)})
	sc = mustSchedule(t, cfg, plans10(a5, b))
	log, prof = drive(t, sc, t0, constServer(s))
	checkSchedule(t, log[:5], `
L1 B s0.2 @0 warm new#1 tok1
L0 A s0.2 @19.5 warm new#0 tok1
L0 A s0.3 @20.5 warm tok1
L1 B s0.3 @20.5 warm tok1
L0 A s0.4 @21.5
`)
	if !prof.Equal(at(21500 * time.Millisecond)) {
		t.Errorf("profiling started at %s, want 21.5", fmtT(prof))
	}
	if x := firstOfLane1(log); x.Turn != 4 || !x.At.Equal(at(74*s)) {
		t.Errorf("lane 1's first profiling send is %s; want B's turn 4 at 74", x)
	}
}

// TestRuleSystemIdleBarrier: the 10 s system idle cap counts a timer that
// fired into a replay barrier as idle: when it fires with nothing in
// flight, the next timer is pulled in to the cap after the last response.
func TestRuleSystemIdleBarrier(t *testing.T) {
	t.Parallel()
	sc := mustSchedule(t, systemIdleConfig(), []*Plan{systemIdlePlan()})
	log, _ := drive(t, sc, t0, constServer(0))
	checkSchedule(t, log, systemIdleWant)
}

// systemIdlePlan: the root R (main chain) and a flat chain F, recorded
//
//	R0 0–30   F0 2–3   F1 20–21   R1 35–36   F2 40–41
//
// F0 starts before R0 ends: F is spawned when R0 is sent, F0 due 2 s
// later. Delays, end to start: R1 35 − 30 = 5, F1 20 − 3 = 17,
// F2 40 − 21 = 19. Barriers: R1 waits for F1 (ended 21 ≤ 35); F2 for R1
// (ended 36 ≤ 40); F outlives R, so nothing joins it.
func systemIdlePlan() *Plan {
	tr := flatTrace("H", []Request{req(0, 30), req(2, 1), req(20, 1), req(35, 1), req(40, 1)}, []int{0, 3}, []int{1, 2, 4})
	return BuildPlan(&tr, 0, PlanOptions{Generation: V10})
}

// systemIdleConfig: t* at the tree's start (no primer), 10 s system cap.
func systemIdleConfig() Config {
	return Config{Generation: V10, Lanes: 1, Duration: 22 * s, SystemIdleCap: 10 * s}
}

// systemIdleWant, with every request answered at once:
//   - 0: R0 sent and back. F0 due at 2, R1 at 0 + 5 = 5.
//   - 2: F0 sent and back: idle from 2. F1 due 2 + 17 = 19; the earliest
//     timer (R1, 5) is within the cap: nothing moves.
//   - 5: R1's timer fires into its barrier (F1 not done). Still idle since
//     2: the cap leaves 10 − 3 = 7 s, so F1 (19) moves to 5 + 7 = 12.
//     (Without the rule F1 would wait until 19.)
//   - 12: F1 sent and back; R1 released, sent and back. F2 due 12 + 19 =
//     31; idle from 12, so it moves to 12 + 10 = 22, which is the
//     deadline (22 s): nothing is released at or after it.
const systemIdleWant = `
L0 H s0.0 @0 new#0
L0 H s1.0 @2 new#1
L0 H s1.1 @12
L0 H s0.1 @12
`

// TestRuleTraceIdleBarrier: the per-tree idle watchdog (300 s): once a
// tree has been idle for the cap, its earliest timer fires; when that
// timer fires into a replay barrier, the tree is still idle past its cap,
// so its next timer is advanced at once, not a whole cap later.
func TestRuleTraceIdleBarrier(t *testing.T) {
	t.Parallel()
	// Recorded: R0 0–200, F0 2–3, F1 700–701, R1 800–801, F2 900–901.
	// F is spawned when R0 is sent (F0 starts before R0 ends), F0 2 s
	// later. Delays: R1 800 − 200 = 600, F1 700 − 3 = 697, F2 900 − 701 =
	// 199. Barriers: R1 waits for F1, F2 for R1.
	tr := flatTrace("W", []Request{req(0, 200), req(2, 1), req(700, 1), req(800, 1), req(900, 1)}, []int{0, 3}, []int{1, 2, 4})
	p := BuildPlan(&tr, 0, PlanOptions{Generation: V10})
	cfg := Config{Generation: V10, Lanes: 1, Duration: 600 * s, TraceIdleCap: 300 * s}
	sc := mustSchedule(t, cfg, []*Plan{p})
	log, _ := drive(t, sc, t0, constServer(0))
	// Every request answered at once:
	//   - 0: R0. R1 due 600; F0 due 2.
	//   - 2: F0; the tree is idle from 2. F1 due 2 + 697 = 699.
	//   - 302: the cap expires: the tree's timers move so the earliest (R1,
	//     600) fires now, F1 with it to 699 − 298 = 401. R1 fires into its
	//     barrier (F1 not done): the tree is still idle past its cap, so F1
	//     is advanced at once, to 302 (not to 401, nor a cap later).
	//   - 302: F1 sent and back; R1 released and back. F2 due 302 + 199 =
	//     501, within the cap: on time.
	checkSchedule(t, log[:5], `
L0 W s0.0 @0 new#0
L0 W s1.0 @2 new#1
L0 W s1.1 @302
L0 W s0.1 @302
L0 W s1.2 @501
`)
	if st := sc.Stats(); st.TraceIdleJumps < 2 || st.TraceIdleSkipped < (298+99)*s {
		t.Errorf("Stats = %+v, want the two jumps of 298 s and 99 s", st)
	}
}
