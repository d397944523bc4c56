package plan

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/timing"
)

func generation(t *testing.T, name string) timing.Generation {
	t.Helper()
	g, err := timing.LookupGeneration(name)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestConvert: the turn model carries each request's recorded times, the
// entries' positions, durations (ms → s), sizes and nested counts; chain
// layouts only under the chain layout, the top level's only when it is
// split and has two requests.
func TestConvert(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	r := func(tm, api, think float64, h ...uint32) dataset.Request {
		return dataset.Request{T: tm, APITime: api, ThinkTime: think, In: 100, Out: 10, Model: "m", HashIDs: h}
	}
	tr := dataset.Trace{ID: "T", BlockSize: 64, ToolTokens: 64, SystemTokens: 64,
		Requests: []dataset.Request{r(0, 1, nan, 1, 2, 3), r(2, 1, 1, 1, 2, 3, 4), r(3, 0.5, nan, 1, 2, 7), r(9, 1, 5, 1, 2, 3, 4, 5)},
		Subagents: []dataset.Subagent{{After: 1, T: 1.5, AgentID: "a", DurationMs: 2500, ToolTokens: 5, SystemTokens: 6,
			Requests:  []dataset.Request{r(1.5, 1, nan, 8), r(2.5, 1, nan, 8, 9)},
			Subagents: []dataset.Subagent{{Requests: []dataset.Request{r(2, 0, nan)}, Subagents: []dataset.Subagent{{Requests: []dataset.Request{r(2, 0, nan), r(2, 0, nan)}}}}}},
		}}
	chains := dataset.DefaultChainOptions()

	got := Convert(&tr, timing.LayoutOverlap, chains)
	if got.ID != "T" || got.ToolTokens != 64 || got.SystemTokens != 64 || len(got.Requests) != 4 || len(got.Subagents) != 1 {
		t.Fatalf("Convert = %+v", got)
	}
	if q := got.Requests[1]; q.T != 2 || q.APITime != 1 || q.ThinkTime != 1 || !math.IsNaN(got.Requests[0].ThinkTime) {
		t.Errorf("request times %+v, %+v: want T 2, api 1, think 1, and NaN kept", q, got.Requests[0])
	}
	sa := got.Subagents[0]
	if sa.After != 1 || sa.T != 1.5 || sa.Duration != 2.5 || sa.AgentID != "a" || sa.ToolTokens != 5 || sa.SystemTokens != 6 ||
		len(sa.Requests) != 2 || sa.NestedEntries != 2 || sa.NestedRequests != 3 {
		t.Errorf("subagent %+v: want after 1, t 1.5, 2.5 s, a, 5/6 tokens, 2 requests, 2 nested entries with 3 requests", sa)
	}
	if got.Chains != nil || sa.Chains != nil {
		t.Errorf("overlap layout: chains %+v / %+v, want none", got.Chains, sa.Chains)
	}

	got = Convert(&tr, timing.LayoutChains, chains)
	want := &timing.Chains{Main: []int{0, 1, 3}, Workers: []timing.Chain{{Label: "aux:000", Reqs: []int{2}, ToolTokens: 64, SystemTokens: 64}}}
	if !reflect.DeepEqual(got.Chains, want) {
		t.Errorf("top-level chains %+v, want %+v (the worker starts with the main chain's two declared-prefix blocks)", got.Chains, want)
	}
	if c := got.Subagents[0].Chains; c == nil || !reflect.DeepEqual(c.Main, []int{0, 1}) || len(c.Workers) != 0 {
		t.Errorf("subagent chains %+v, want one main chain [0 1]", c)
	}

	unsplit := chains
	unsplit.Split = false
	got = Convert(&tr, timing.LayoutChains, unsplit)
	if got.Chains != nil || got.Subagents[0].Chains == nil {
		t.Errorf("no split: top-level chains %+v (want none: the root keeps the trace's order), subagent chains %+v (want its start order)", got.Chains, got.Subagents[0].Chains)
	}
	one := dataset.Trace{ID: "one", Requests: tr.Requests[:1]}
	if got := Convert(&one, timing.LayoutChains, chains); got.Chains != nil {
		t.Errorf("one request: chains %+v, want none", got.Chains)
	}
}

// TestRequestsLocateEveryTurn: on synthetic corpora with subagents, under
// every generation, each stream's Requests are the requests its turns
// were planned from (the same start, in turn order), every request of
// the trace is in exactly one stream unless the plan counts it dropped or
// skipped, and a stream that holds its whole list in order shares it.
func TestRequestsLocateEveryTurn(t *testing.T) {
	t.Parallel()
	for _, name := range timing.GenerationNames() {
		g := generation(t, name)
		for seed := range int64(8) {
			traces := dataset.Synthesize(dataset.SynthOptions{Seed: seed, Traces: 4, Subagents: true, MinTurns: 3, MaxTurns: 14, TimeScale: 0.1})
			plans := Build(traces, Options{PlanOptions: timing.PlanOptions{Generation: g}})
			for i, p := range plans {
				tr := &traces[i]
				if p.Trace != i || p.TraceID != tr.ID {
					t.Fatalf("%s seed %d: plan %d is of trace %d %s", name, seed, i, p.Trace, p.TraceID)
				}
				seen := map[string]int{}
				for si := range p.Streams {
					st := &p.Streams[si]
					reqs := Requests(tr, st)
					if len(reqs) != len(st.Turns) {
						t.Fatalf("%s: %s has %d turns but %d requests", name, st.ConvID, len(st.Turns), len(reqs))
					}
					for k := range st.Turns {
						// Without v0.3's warp a turn's start is its request's.
						if a, b := st.Turns[k].Start, reqs[k].T; !g.IdleWarp && a != b && !(math.IsNaN(a) && math.IsNaN(b)) {
							t.Fatalf("%s: %s turn %d starts at %v, its request at %v", name, st.ConvID, k, a, b)
						}
						seen[fmt.Sprint(st.Subagent, st.Turns[k].Inner)]++
					}
					if si == 0 && len(p.Streams) == 1 && len(reqs) > 0 && &reqs[0] != &tr.Requests[0] {
						t.Errorf("%s: the unsplit root of %s is a copy of the trace's requests", name, tr.ID)
					}
				}
				for key, n := range seen {
					if n != 1 {
						t.Fatalf("%s: request %s of %s is in %d streams", name, key, tr.ID, n)
					}
				}
				total := len(tr.Requests) + tr.NumSubagentRequests()
				if len(seen)+p.DroppedRequests+p.SkippedRequests != total {
					t.Fatalf("%s: %s: %d requests in streams + %d dropped + %d skipped, want the trace's %d", name, tr.ID, len(seen), p.DroppedRequests, p.SkippedRequests, total)
				}
			}
		}
	}
}

// TestBuildIsBuildPlanOfConvert: Build is timing.BuildPlan of each
// trace's Convert with the options' chain switches (nil: the pinned
// loader's).
func TestBuildIsBuildPlanOfConvert(t *testing.T) {
	t.Parallel()
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 3, Traces: 3, Subagents: true, MinTurns: 4, MaxTurns: 12, TimeScale: 0.1})
	g := generation(t, "v1.0")
	noGroups := dataset.DefaultChainOptions()
	noGroups.WorkerGroupMin, noGroups.AuxMaxRequests = 0, 0
	for _, co := range []*dataset.ChainOptions{nil, &noGroups} {
		o := Options{PlanOptions: timing.PlanOptions{Generation: g}, Chains: co}
		got := Build(traces, o)
		want := dataset.DefaultChainOptions()
		if co != nil {
			want = *co
		}
		for i := range traces {
			tt := Convert(&traces[i], g.Layout, want)
			if w := timing.BuildPlan(&tt, i, o.PlanOptions); !reflect.DeepEqual(got[i], w) {
				t.Fatalf("chains %+v: Build's plan of trace %d differs from BuildPlan(Convert)", co, i)
			}
		}
	}
}
