package timing_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/plan"
	. "github.com/agentperf/agentperf/timing"
)

// plansOf builds the plans of a dataset corpus as the engine does.
func plansOf(gen Generation, traces []dataset.Trace) []*Plan {
	return plan.Build(traces, plan.Options{PlanOptions: PlanOptions{Generation: gen, InterTurnDelayCap: DefaultInterTurnDelayCap, IdleGapCap: DefaultV03IdleGapCap}})
}

// TestTreeScheduleProperties drives synthetic corpora with subagents
// (joins, background children, sibling streams, anchorless entries)
// through every generation on a fake clock, with random service times and
// outcomes, and checks the invariants every schedule keeps:
//   - a stream's turns go out in order, one at a time, each after the
//     previous one completed;
//   - a child's first turn goes out after its spawning turn completed (or
//     was sent, for a branch spawned on send);
//   - a join turn goes out after every child of its spawned branches
//     finished;
//   - nothing is sent at or after the deadline;
//   - every lane ends, and the driver never sees a busy loop.
func TestTreeScheduleProperties(t *testing.T) {
	t.Parallel()
	iters := 200
	if testing.Short() {
		iters = 10
	}
	for iter := range iters {
		rng := rand.New(rand.NewPCG(uint64(iter), 99))
		traces := dataset.Synthesize(dataset.SynthOptions{Seed: int64(iter), Traces: 1 + rng.IntN(6), Subagents: true,
			MinTurns: 3, MaxTurns: 12, TimeScale: 0.05 + rng.Float64()})
		for _, gen := range []Generation{V02, V03, V10} {
			for _, turnStart := range []bool{false, true} {
				name := fmt.Sprintf("iter %d %s turn-start %v", iter, gen, turnStart)
				plans := plansOf(gen, traces)
				g := gen
				if turnStart {
					g = WithTurnStart(g)
				}
				cfg := Config{Generation: g, Lanes: 1 + rng.IntN(5), Seed: int64(iter), StartMinRatio: 0.25, StartMaxRatio: 0.75,
					Duration: time.Duration(20+rng.IntN(300)) * S}
				if gen == V10 {
					cfg.SystemIdleCap = time.Duration(rng.IntN(2)) * DefaultSystemIdleCap
					cfg.TraceIdleCap = time.Duration(rng.IntN(3)) * 7 * S
					cfg.BurstPhaseStarts = rng.IntN(3) == 0
					switch rng.IntN(3) {
					case 1:
						cfg.WarmupRequestsPerLane = 1 + rng.IntN(6)
					case 2:
						cfg.WarmupDuration = time.Duration(1+rng.IntN(20)) * S
					}
				}
				sc, err := New(cfg, plans)
				if err != nil {
					continue // no usable trace
				}
				srv := func(Send) (time.Duration, Outcome) {
					out := Outcome{Failed: rng.IntN(12) == 0, Overflow: rng.IntN(40) == 0}
					return time.Duration(rng.IntN(4000)) * time.Millisecond, out
				}
				log, prof := Drive(t, sc, T0, srv)
				if err := checkTreeLog(log, prof, cfg.Duration); err != nil {
					var plansDesc string
					for _, p := range plans {
						plansDesc += DescribePlan(p)
					}
					t.Fatalf("%s: %v\n%s\n%s\n%s", name, err, DescribeStarts(sc), plansDesc, Render(log))
				}
				st := sc.Stats()
				if st.LanesDone != cfg.Lanes {
					t.Fatalf("%s: %d of %d lanes done", name, st.LanesDone, cfg.Lanes)
				}
				if cfg.WarmupRequestsPerLane > 0 && st.Sent[0] != sc.WarmupSends() {
					t.Fatalf("%s: %d warmup sends, want the target %d (primers + lanes × %d)\n%s", name, st.Sent[0], sc.WarmupSends(), cfg.WarmupRequestsPerLane, Render(log))
				}
			}
		}
	}
}

// checkTreeLog checks a driven log against the invariants of
// TestTreeScheduleProperties.
func checkTreeLog(log []Served, profStart time.Time, dur time.Duration) error {
	deadline := profStart.Add(dur)
	type key struct {
		tree   int64
		stream int
	}
	last := map[key]*Served{}
	// completion of every (tree, stream, turn) seen so far
	type tk struct {
		tree         int64
		stream, turn int
	}
	done := map[tk]time.Time{}
	sent := map[tk]time.Time{}
	for i := range log {
		x := &log[i]
		k := key{x.Tree, x.Stream}
		if x.Phase == Profiling && !x.At.Before(deadline) {
			return fmt.Errorf("%s sent at or after the deadline %s", x, FmtT(deadline))
		}
		if p := last[k]; p != nil && !x.NewSession {
			if x.Turn != p.Turn+1 && !(x.Turn == p.Turn && x.Phase != p.Phase) {
				return fmt.Errorf("%s does not follow %s", x, p)
			}
			if x.At.Before(p.Done) {
				return fmt.Errorf("%s sent before %s completed at %s", x, p, FmtT(p.Done))
			}
		}
		last[k] = x
		st := &x.Plan.Streams[x.Stream]
		if x.Stream > 0 && x.Turn == 0 && x.Phase == Profiling && !x.Seeded {
			b := &x.Plan.Branches[st.Branch]
			ref := tk{x.Tree, b.Parent, b.SpawnTurn}
			at, ok := done[ref]
			if b.SpawnOnSend {
				at, ok = sent[ref]
			}
			if !ok || x.At.Before(at) {
				return fmt.Errorf("%s: child sent before its spawning turn %v (at %s, known %v)", x, ref, FmtT(at), ok)
			}
		}
		for _, bi := range st.Turns[x.Turn].Joins {
			b := &x.Plan.Branches[bi]
			spawned := false
			for _, c := range b.Children {
				for j := 0; j < i; j++ {
					if log[j].Tree == x.Tree && log[j].Stream == c {
						spawned = true
					}
				}
			}
			if !spawned {
				continue
			}
			for _, c := range b.Children {
				// every sent turn of the child must be done before x
				for j := 0; j < i; j++ {
					y := &log[j]
					if y.Tree == x.Tree && y.Stream == c && y.Done.After(x.At) {
						return fmt.Errorf("%s sent before child %s completed at %s", x, y, FmtT(y.Done))
					}
				}
			}
		}
		sent[tk{x.Tree, x.Stream, x.Turn}] = x.At
		done[tk{x.Tree, x.Stream, x.Turn}] = x.Done
	}
	return nil
}
