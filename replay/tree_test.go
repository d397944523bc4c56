package replay

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/internal/testshared"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/plan"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
	"github.com/agentperf/agentperf/timing"
)

// treeSim starts a zero-latency simulator that never evicts and never
// overflows, so every recorded request can be replayed.
func treeSim(t testing.TB) *sim.Server {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Model = "m"
	cfg.ZeroLatency = true
	cfg.KVCapacityTokens = 100_000_000
	cfg.MaxModelLen = 10_000_000
	cfg.Tokenizer = tokenizer.Builtin()
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// treeRun is one replay of a corpus as session trees.
type treeRun struct {
	res   *Result
	recs  []*metrics.Record
	plans []*timing.Plan
	cfg   Config
}

func runTrees(t *testing.T, url string, traces []dataset.Trace, gen timing.Generation, turnStart bool, lanes int, dur, idleCap time.Duration) treeRun {
	t.Helper()
	syn, err := prompttext.New(tokenizer.Builtin(), prompttext.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	cfg := DefaultConfig()
	cfg.URL, cfg.Models, cfg.Traces, cfg.Synth = url, []string{"m"}, traces, syn
	if turnStart {
		gen.Start = timing.StartTurn
	}
	cfg.Generation, cfg.TraceIdleGapCap, cfg.InterTurnDelayCap = gen, idleCap, idleCap
	cfg.SystemIdleGapCap = 0
	cfg.Concurrency, cfg.Seed, cfg.BenchmarkDuration = lanes, 42, dur
	cfg.Streaming, cfg.IgnoreEOS, cfg.UseServerTokenCount = true, true, true
	cfg.CacheBust, cfg.Classifier, cfg.Sink = presetMarkers, scenario.DefaultClassifier(), sink
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Accounting.Check(); err != nil {
		t.Fatalf("accounting: %v (%+v)", err, res.Accounting)
	}
	if res.Aborted != "" {
		t.Fatalf("run aborted: %s", res.AbortMessage)
	}
	return treeRun{res: res, recs: sink.records(), plans: BuildPlans(&cfg), cfg: cfg}
}

// tree is the records of one session tree.
type tree struct {
	plan *timing.Plan
	// byStream holds each stream's records in send order.
	byStream map[int][]*metrics.Record
	recs     []*metrics.Record
}

// trees groups a run's records by tree (root_correlation_id) and maps each
// to its stream in the trace's plan.
func (r treeRun) trees(t *testing.T) map[string]*tree {
	t.Helper()
	byID := map[string]*timing.Plan{}
	for _, p := range r.plans {
		byID[p.TraceID] = p
	}
	out := map[string]*tree{}
	for _, rec := range r.recs {
		tr := out[rec.RootCorrelationID]
		if tr == nil {
			p := byID[rec.SourceTraceID]
			if p == nil {
				t.Fatalf("record of unknown trace %q", rec.SourceTraceID)
			}
			tr = &tree{plan: p, byStream: map[int][]*metrics.Record{}}
			out[rec.RootCorrelationID] = tr
		}
		if tr.plan.TraceID != rec.SourceTraceID {
			t.Fatalf("tree %s mixes traces %s and %s", rec.RootCorrelationID, tr.plan.TraceID, rec.SourceTraceID)
		}
		si := -1
		for i := range tr.plan.Streams {
			if tr.plan.Streams[i].ConvID == rec.ConversationID {
				si = i
			}
		}
		if si < 0 {
			t.Fatalf("record of unknown conversation %q in trace %s", rec.ConversationID, rec.SourceTraceID)
		}
		tr.byStream[si] = append(tr.byStream[si], rec)
		tr.recs = append(tr.recs, rec)
	}
	for _, tr := range out {
		for _, rs := range tr.byStream {
			sort.Slice(rs, func(a, b int) bool { return rs[a].RequestStartNs < rs[b].RequestStartNs })
		}
	}
	return out
}

// checkTrees asserts what every replay of session trees must show in its
// records: each child's requests end before the parent turn that joins
// them starts; a stream's turns follow one another; records carry the
// tree's identity; and every tree the lane left before the last second of
// the run was replayed whole (no subagent request skipped).
func checkTrees(t *testing.T, r treeRun) {
	t.Helper()
	trees := r.trees(t)
	deadline := r.res.Deadline.UnixNano()
	whole := 0
	for id, tr := range trees {
		for si, rs := range tr.byStream {
			st := &tr.plan.Streams[si]
			for i, rec := range rs {
				if rec.AgentDepth != st.Depth || rec.SourceKind != st.Kind.String() || rec.RootCorrelationID != id {
					t.Fatalf("record %s turn %d: depth %d kind %s root %s, want %d %s %s", rec.ConversationID, rec.TurnIndex, rec.AgentDepth, rec.SourceKind, rec.RootCorrelationID, st.Depth, st.Kind, id)
				}
				if st.Parent >= 0 && rec.ParentCorrelationID == "" {
					t.Fatalf("child record %s without parent_correlation_id", rec.ConversationID)
				}
				if rec.SourceOuterIdx != st.Turns[rec.TurnIndex].OuterIdx {
					t.Fatalf("record %s turn %d: source_outer_idx %d, want %d", rec.ConversationID, rec.TurnIndex, rec.SourceOuterIdx, st.Turns[rec.TurnIndex].OuterIdx)
				}
				if i > 0 {
					prev := rs[i-1]
					same := prev.TurnIndex == rec.TurnIndex && prev.Phase == metrics.PhaseWarmup && rec.Phase == metrics.PhaseProfiling
					if rec.TurnIndex != prev.TurnIndex+1 && !same {
						t.Fatalf("stream %s: turn %d after turn %d", rec.ConversationID, rec.TurnIndex, prev.TurnIndex)
					}
					if rec.RequestStartNs < prev.RequestEndNs {
						t.Fatalf("stream %s: turn %d started before turn %d ended", rec.ConversationID, rec.TurnIndex, prev.TurnIndex)
					}
				}
				// A join turn starts after every request of the children it
				// waits for.
				for _, b := range st.Turns[rec.TurnIndex].Joins {
					for _, c := range tr.plan.Branches[b].Children {
						for _, cr := range tr.byStream[c] {
							if cr.RequestEndNs > rec.RequestStartNs {
								t.Fatalf("tree %s: %s turn %d started at %d, before child %s turn %d ended at %d",
									id, rec.ConversationID, rec.TurnIndex, rec.RequestStartNs, cr.ConversationID, cr.TurnIndex, cr.RequestEndNs)
							}
						}
					}
				}
			}
		}
		// A tree that started at turn 0 and went quiet a second before the
		// deadline sent every request of its plan.
		root := tr.byStream[0]
		if len(root) == 0 || root[0].TurnIndex != 0 || root[0].Phase != metrics.PhaseProfiling {
			continue
		}
		last := int64(0)
		for _, rec := range tr.recs {
			last = max(last, rec.RequestEndNs)
		}
		if last > deadline-int64(time.Second) {
			continue
		}
		whole++
		if len(tr.recs) != tr.plan.Requests() {
			var missing []string
			for si := range tr.plan.Streams {
				if n := len(tr.byStream[si]); n != len(tr.plan.Streams[si].Turns) {
					missing = append(missing, fmt.Sprintf("%s %d/%d", tr.plan.Streams[si].ConvID, n, len(tr.plan.Streams[si].Turns)))
				}
			}
			t.Fatalf("tree %s of %s ended at %s, a second before the deadline, with %d of its %d requests sent: %s",
				id, tr.plan.TraceID, time.Unix(0, last).Format(time.StampMilli), len(tr.recs), tr.plan.Requests(), strings.Join(missing, ", "))
		}
	}
	if whole == 0 {
		t.Fatalf("no tree was replayed whole before the deadline (%d trees); lengthen the run", len(trees))
	}
	if r.res.SkippedSubagentRequests != 0 {
		t.Fatalf("%d subagent requests skipped", r.res.SkippedSubagentRequests)
	}
}

// maxInFlight returns the largest number of requests in flight at once.
func maxInFlight(recs []*metrics.Record) int {
	type ev struct {
		at int64
		d  int
	}
	var evs []ev
	for _, r := range recs {
		evs = append(evs, ev{r.RequestStartNs, 1}, ev{r.RequestEndNs, -1})
	}
	sort.Slice(evs, func(a, b int) bool {
		if evs[a].at != evs[b].at {
			return evs[a].at < evs[b].at
		}
		return evs[a].d < evs[b].d
	})
	n, top := 0, 0
	for _, e := range evs {
		n += e.d
		top = max(top, n)
	}
	return top
}

func subagentCorpus() []dataset.Trace {
	return dataset.Synthesize(dataset.SynthOptions{Seed: 5, Traces: 10, Subagents: true, MinTurns: 4, MaxTurns: 10, TimeScale: 0.002})
}

// TestTreesEndToEnd replays a corpus with subagents (joins, background
// children, sibling streams) against the simulator in each generation
// that replays trees.
func TestTreesEndToEnd(t *testing.T) {
	srv := treeSim(t)
	for _, c := range []struct {
		name      string
		gen       timing.Generation
		turnStart bool
	}{{"v0.3", timing.V03, false}, {"v0.3-early", timing.V03, true}} {
		t.Run(c.name, func(t *testing.T) {
			const lanes = 3
			r := runTrees(t, srv.URL, subagentCorpus(), c.gen, c.turnStart, lanes, 4*time.Second, 20*time.Millisecond)
			checkTrees(t, r)
			if n := maxInFlight(r.recs); n <= lanes {
				t.Errorf("at most %d requests in flight on %d lanes: subagent fan-out never showed", n, lanes)
			}
			if r.res.Subagents.Sent == 0 || r.res.Subagents.Started == 0 {
				t.Errorf("no child request sent: %+v", r.res.Subagents)
			}
		})
	}
}

// TestTreesRealCorpus replays the shared sample's traces that have
// subagents (and a few others) as session trees.
func TestTreesRealCorpus(t *testing.T) {
	if testing.Short() || raceEnabled {
		// Whole trees of the real traces (a hundred turns of up to 200k
		// tokens) take too long under the race detector; .ci/run runs this
		// test without it.
		t.Skip("skipped under -race and -short")
	}
	all, _, err := dataset.ReadPath(testshared.Path(t, filepath.Join("traces", "kvct-200.jsonl.zst")), dataset.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var traces []dataset.Trace
	for i := range all {
		if len(all[i].Subagents) > 0 || len(traces) < 2 {
			traces = append(traces, all[i])
		}
	}
	srv := treeSim(t)
	r := runTrees(t, srv.URL, traces, timing.V03, true, len(traces), 8*time.Second, 5*time.Millisecond)
	checkTrees(t, r)
	if r.res.Subagents.Sent == 0 {
		t.Fatalf("no subagent request was sent: %+v", r.res.Subagents)
	}
	checkWarpGaps(t, r, traces)
	t.Logf("%d traces, %d lanes: %d requests (%d of children), subagents %+v, max in flight %d", len(traces), len(traces), len(r.recs), r.res.Subagents.Sent, r.res.Subagents, maxInFlight(r.recs))
}

// checkWarpGaps checks, for every profiling turn k ≥ 1 of a stream whose
// turn k−1 was also sent in profiling (and that no join held), that it was
// due exactly the warped start-to-start gap after turn k−1 ended. The warp
// is computed here from the raw trace: the starts of the parent requests
// and of every request of every subagent that a parent request precedes,
// sorted; a gap longer than the cap keeps the cap, and every later start
// moves left by what was cut.
func checkWarpGaps(t *testing.T, r treeRun, traces []dataset.Trace) {
	t.Helper()
	warped := map[string]func(float64) float64{}
	for i := range traces {
		tr := &traces[i]
		var starts []float64
		for _, q := range tr.Requests {
			starts = append(starts, q.T)
		}
		for _, sa := range tr.Subagents {
			if sa.After == 0 {
				continue
			}
			for _, q := range sa.Requests {
				starts = append(starts, q.T)
			}
		}
		sort.Float64s(starts)
		capS := r.cfg.TraceIdleGapCap.Seconds()
		warped[tr.ID] = func(x float64) float64 {
			cut := 0.0
			for j := 1; j < len(starts) && starts[j] <= x; j++ {
				if g := starts[j] - starts[j-1]; g > capS {
					cut += g - capS
				}
			}
			return x - cut
		}
	}
	checked := 0
	for _, tr := range r.trees(t) {
		w := warped[tr.plan.TraceID]
		for si, rs := range tr.byStream {
			st := &tr.plan.Streams[si]
			reqs := plan.Requests(&traces[tr.plan.Trace], st)
			for i := 1; i < len(rs); i++ {
				rec, prev := rs[i], rs[i-1]
				if rec.Phase != metrics.PhaseProfiling || prev.Phase != metrics.PhaseProfiling || len(st.Turns[rec.TurnIndex].Joins) > 0 {
					continue
				}
				want := w(reqs[rec.TurnIndex].T) - w(reqs[rec.TurnIndex-1].T)
				got := float64(rec.CreditIssuedNs-prev.RequestEndNs) / 1e9
				if math.Abs(got-want) > 1e-6 {
					t.Fatalf("%s turn %d was due %.6f s after turn %d ended, want the warped gap %.6f s", rec.ConversationID, rec.TurnIndex, got, prev.TurnIndex, want)
				}
				checked++
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d gaps checked", checked)
	}
	t.Logf("%d warped gaps checked", checked)
}

// TestTreesDeterministic: the same seed gives the same trees, start
// states and session numbers on two runs.
func TestTreesDeterministic(t *testing.T) {
	srv := treeSim(t)
	corpus := subagentCorpus()
	warm := func(r treeRun) string {
		var lines []string
		for _, rec := range r.recs {
			if rec.Phase == metrics.PhaseWarmup {
				lines = append(lines, fmt.Sprintf("lane %d %s turn %d session %d", rec.Lane, rec.ConversationID, rec.TurnIndex, rec.SessionNum))
			}
		}
		sort.Strings(lines)
		return strings.Join(lines, "\n")
	}
	for _, turnStart := range []bool{false, true} {
		a := runTrees(t, srv.URL, corpus, timing.V03, turnStart, 4, 500*time.Millisecond, 20*time.Millisecond)
		b := runTrees(t, srv.URL, corpus, timing.V03, turnStart, 4, 500*time.Millisecond, 20*time.Millisecond)
		if wa, wb := warm(a), warm(b); wa != wb || wa == "" {
			t.Fatalf("turn-start %v: warmup differs between two runs with the same seed:\n%s\n---\n%s", turnStart, wa, wb)
		}
		if fmt.Sprint(a.res.StartTurns) != fmt.Sprint(b.res.StartTurns) {
			t.Fatalf("start turns %v and %v", a.res.StartTurns, b.res.StartTurns)
		}
	}
}
