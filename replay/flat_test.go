package replay

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/text/tokenizer"
	"github.com/agentperf/agentperf/timing"
)

// flatTrace is a trace whose top level holds three agents, as a capture
// that flattened them records it: the main chain (r*), a chain forked
// while the root's turn 1 is in flight and joined by turn 3 (f*), and a
// chain that outlives the root (g*, a background branch).
func flatTrace(id string, base uint32) dataset.Trace {
	h := func(ids ...uint32) []uint32 {
		out := make([]uint32, len(ids))
		for i, x := range ids {
			out[i] = base + x
		}
		return out
	}
	r := func(t, api float64, ids []uint32) dataset.Request {
		return dataset.Request{T: t, Type: "s", Model: "m", In: 64*len(ids) + 20, Out: 10, HashIDs: ids,
			APITime: api, ThinkTime: math.NaN(), TTFT: math.NaN()}
	}
	return dataset.Trace{ID: id, BlockSize: 64, Requests: []dataset.Request{
		r(0, 0.02, h(1, 2)),                       // r0
		r(0.03, 0.02, h(1, 2, 3)),                 // r1
		r(0.035, 0.05, h(1, 2, 9)),                // f0: forks while r1 runs
		r(0.06, 0.02, h(1, 2, 3, 4)),              // r2: beside f0
		r(0.09, 0.02, h(1, 2, 9, 10)),             // f1
		r(0.12, 0.02, h(1, 2, 3, 4, 5)),           // r3: joins f (ended at 0.11)
		r(0.15, 0.02, h(1, 2, 3, 4, 5, 6)),        // r4
		r(0.16, 0.02, h(1, 2, 3, 4, 5, 6, 50)),    // g0: forks while r4 runs
		r(0.2, 0.02, h(1, 2, 3, 4, 5, 6, 50, 51)), // g1: after the root's last turn
	}}
}

func flatCorpus() []dataset.Trace {
	return []dataset.Trace{flatTrace("F1", 0), flatTrace("F2", 1000), flatTrace("F3", 2000)}
}

// TestFlatChainsEndToEnd: v1.0 replays each top-level chain as its own
// conversation (weka_flat, depth 1, "<trace>::fa:NNN"), concurrently with
// the root where the recording overlaps, and no join turn starts before
// its chains ended (checkTrees).
func TestFlatChainsEndToEnd(t *testing.T) {
	// Requests must take time for chains to run beside the root: a
	// zero-latency server answers before the next one is sent (on a quiet
	// machine nothing would overlap). Ten output tokens at 3 ms a step
	// keep each request in flight for about 30 ms, the recorded scale.
	cfg := sim.DefaultConfig()
	cfg.Model, cfg.Tokenizer = "m", tokenizer.Builtin()
	cfg.KVCapacityTokens, cfg.MaxModelLen = 100_000_000, 10_000_000
	cfg.DecodeBaseMs = 3
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	r := runTrees(t, srv.URL, flatCorpus(), timing.V10, false, 2, 3*time.Second, 0)
	p := r.plans[0]
	if len(p.Streams) != 3 || p.Streams[1].ConvID != "F1::fa:000" || p.Streams[2].ConvID != "F1::fa:001" {
		t.Fatalf("plan of F1: %d streams %v; want the root, F1::fa:000 and F1::fa:001", len(p.Streams), convIDs(p))
	}
	if b := p.Branches[p.Streams[1].Branch]; b.SpawnTurn != 1 || b.JoinTurn != 3 || !b.SpawnOnSend {
		t.Fatalf("fa:000 branch %+v: want spawned when turn 1 is sent, joined by turn 3", b)
	}
	if b := p.Branches[p.Streams[2].Branch]; b.SpawnTurn != 4 || !b.Background() {
		t.Fatalf("fa:001 branch %+v: want spawned by turn 4, in the background", b)
	}
	checkTrees(t, r)
	flat, overlapping := 0, 0
	trees := r.trees(t)
	for _, tr := range trees {
		for si, rs := range tr.byStream {
			if tr.plan.Streams[si].Kind != timing.SourceFlat {
				continue
			}
			for _, rec := range rs {
				flat++
				if rec.SourceKind != "weka_flat" || rec.AgentDepth != 1 || !strings.Contains(rec.ConversationID, "::fa:") {
					t.Fatalf("flat record %s: kind %s depth %d", rec.ConversationID, rec.SourceKind, rec.AgentDepth)
				}
				for _, root := range tr.byStream[0] {
					if root.RequestStartNs < rec.RequestEndNs && rec.RequestStartNs < root.RequestEndNs {
						overlapping++
						break
					}
				}
			}
		}
	}
	if flat == 0 || overlapping == 0 {
		t.Fatalf("%d flat-chain requests, %d of them beside a root request: want both > 0", flat, overlapping)
	}
	if r.res.Flat.Chains != 6 || r.res.Flat.Traces != 3 || r.res.Subagents.Children != 0 {
		t.Errorf("result counts flat %+v, subagent children %d; want 6 chains in 3 traces, no subagent", r.res.Flat, r.res.Subagents.Children)
	}
}

func derefPlans(ps []*timing.Plan) []timing.Plan {
	out := make([]timing.Plan, len(ps))
	for i, p := range ps {
		out[i] = *p
	}
	return out
}

func convIDs(p *timing.Plan) []string {
	var out []string
	for i := range p.Streams {
		out = append(out, p.Streams[i].ConvID)
	}
	return out
}

// TestFlatChainsDeterministic: the same seed gives the same layout and
// the same warmup schedule twice.
func TestFlatChainsDeterministic(t *testing.T) {
	srv := treeSim(t)
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
	a := runTrees(t, srv.URL, flatCorpus(), timing.V10, false, 3, 300*time.Millisecond, 0)
	b := runTrees(t, srv.URL, flatCorpus(), timing.V10, false, 3, 300*time.Millisecond, 0)
	// (%+v rather than reflect.DeepEqual: the requests hold NaNs.)
	pa, pb := fmt.Sprintf("%+v", derefPlans(a.plans)), fmt.Sprintf("%+v", derefPlans(b.plans))
	if pa != pb || !strings.Contains(pa, "::fa:001") {
		t.Fatal("two builds of the same corpus give different plans")
	}
	if wa, wb := warm(a), warm(b); wa != wb || wa == "" {
		t.Fatalf("warmup differs between two runs with the same seed:\n%s\n---\n%s", wa, wb)
	}
}
