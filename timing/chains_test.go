package timing_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	. "github.com/agentperf/agentperf/timing"
)

// The tests of this file plan traces whose v1.0 chain layout comes from
// their hash ids: package plan detects it (dataset.LayoutChains) and
// timing plans it.

var nan = math.NaN()

// req is a request starting at t (absolute seconds) that took api seconds.
func req(t, api float64) dataset.Request {
	return dataset.Request{T: t, APITime: api, ThinkTime: nan, In: 100, Out: 10}
}

// sub is a subagent entry after the first `after` parent requests,
// starting at t and running dur seconds.
func sub(id string, after int, t, dur float64, reqs ...dataset.Request) dataset.Subagent {
	return dataset.Subagent{After: after, T: t, AgentID: id, DurationMs: dur * 1000, Requests: reqs}
}

func traceOf(id string, parents []dataset.Request, subs ...dataset.Subagent) dataset.Trace {
	return dataset.Trace{ID: id, Requests: parents, Subagents: subs}
}

// hashed gives r the hash ids ids.
func hashed(r dataset.Request, ids ...uint32) dataset.Request {
	r.HashIDs = ids
	return r
}

// TestV10Barriers: replay barriers between the chains of one subagent. A
// turn waits for, from each other stream, the latest turn that had
// finished by its recorded start; touching intervals are ordered,
// overlapping ones are not, and a turn implied by a later one is dropped.
func TestV10Barriers(t *testing.T) {
	t.Parallel()
	tr := traceOf("B",
		[]dataset.Request{req(0, 1), req(0.5, 0.1), req(100, 1)},
		sub("w", 2, 1, 50,
			hashed(req(1, 4), 1),        // s0 turn 0: 1–5
			hashed(req(2, 2), 9),        // s1 turn 0: 2–4 (overlaps s0.0: no edge)
			hashed(req(5, 5), 1, 2),     // s0 turn 1: 5–10 (after s1.0 ended at 4: edge)
			hashed(req(4, 1), 9, 8),     // s1 turn 1: 4–5 (touches s1.0's end; starts before s0.0 ends)
			hashed(req(10, 1), 1, 2, 3), // s0 turn 2: 10–11; from s1 only s1.1 (ended 5 ≤ 10)
		))
	p := plansOf(V10, []dataset.Trace{tr})[0]
	preds := func(si int) string {
		var out []string
		for k, tn := range p.Streams[si].Turns {
			out = append(out, fmt.Sprintf("%d:%v", k, tn.Preds))
		}
		return fmt.Sprint(out)
	}
	if len(p.Streams) != 3 || p.Streams[2].ConvID != "B::sa:w:fa:000" {
		t.Fatalf("plan %s: want two chains, the second B::sa:w:fa:000", DescribePlan(p))
	}
	// s0 = turns at 1, 5, 10; s1 = turns at 2, 4.
	if got := preds(1); got != "[0:[] 1:[{2 1}] 2:[{2 1}]]" {
		t.Errorf("s0 barriers %s, want turn 1 and 2 after s1's turn 1", got)
	}
	if got := preds(2); got != "[0:[] 1:[]]" {
		t.Errorf("s1 barriers %s, want none (s0.0 overlaps both)", got)
	}
	// At run time s0 turn 1 waits for s1 turn 1 although its own delay
	// (end to start: 5 − 5 = 0) has passed: the children spawn when the
	// root's turn 1 completes (at 2), s1's second turn takes 10 s, and s0's
	// turn 1 goes when it ends (14), its turn 2 right after.
	srv := func(snd Send) (time.Duration, Outcome) {
		if snd.Stream == 2 && snd.Turn == 1 {
			return 10 * S, Outcome{}
		}
		return S, Outcome{}
	}
	sc := MustSchedule(t, Config{Generation: WithTurnStart(V10), Lanes: 1, Duration: 40 * S}, []*Plan{p})
	log, _ := Drive(t, sc, T0, srv)
	CheckSchedule(t, log[:7], `
L0 B s0.0 @0 warm new#0 tok1
L0 B s0.1 @1
L0 B s1.0 @2 new#1
L0 B s2.0 @3 new#2
L0 B s2.1 @4
L0 B s1.1 @14
L0 B s1.2 @15
`)
}

// TestV10FlatChains: a top-level chain recorded while the root's turn 1
// was in flight is spawned when that turn is sent, at its recorded offset
// (5 ms), runs beside the root's turns 1 and 2, and the root's turn 3,
// recorded after the chain ended, waits for it.
func TestV10FlatChains(t *testing.T) {
	t.Parallel()
	ms := func(x float64) float64 { return x / 1000 }
	tr := traceOf("F", []dataset.Request{
		hashed(req(0, ms(20)), 1, 2),
		hashed(req(ms(30), ms(20)), 1, 2, 3),
		hashed(req(ms(35), ms(50)), 1, 2, 9),
		hashed(req(ms(60), ms(20)), 1, 2, 3, 4),
		hashed(req(ms(90), ms(20)), 1, 2, 9, 10),
		hashed(req(ms(120), ms(20)), 1, 2, 3, 4, 5),
	})
	p := plansOf(V10, []dataset.Trace{tr})[0]
	if got := DescribePlan(p); !strings.Contains(got, "1 F::fa:000 parent=0 depth=1: [0 0.005s] [1 0.005s]") ||
		!strings.Contains(got, "[1 0.01s spawn[0]]") || !strings.Contains(got, "[3 0.04s join[0]]") {
		t.Fatalf("plan %s", got)
	}
	// The chain's second request takes 100 ms: the root's turn 3 waits.
	srv := func(snd Send) (time.Duration, Outcome) {
		if snd.Stream == 1 && snd.Turn == 1 {
			return 100 * time.Millisecond, Outcome{}
		}
		return 20 * time.Millisecond, Outcome{}
	}
	sc := MustSchedule(t, Config{Generation: V10, Lanes: 1, Duration: 300 * time.Millisecond}, []*Plan{p})
	log, _ := Drive(t, sc, T0, srv)
	// s1.1 also waits for the root's turn 2 (a replay barrier: the root
	// and its chains share the trace's scope; recorded 60–80 ms, before
	// the chain's 90 ms).
	CheckSchedule(t, log[:6], `
L0 F s0.0 @0 new#0
L0 F s0.1 @0.03
L0 F s1.0 @0.035 new#1
L0 F s0.2 @0.06
L0 F s1.1 @0.08
L0 F s0.3 @0.18
`)
}
