package plan

import (
	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/timing"
)

// Options configure Build.
type Options struct {
	// PlanOptions are timing's: the generation (its delay rule, session
	// layout and subagent replay), the v0.2 delay cap, v0.3's idle-gap
	// cap.
	timing.PlanOptions
	// Chains are the switches of the chain layout, for a generation whose
	// Layout is timing.LayoutChains (nil: dataset.DefaultChainOptions, the
	// pinned loader's).
	Chains *dataset.ChainOptions
}

// chainOptions returns the chain layout switches in force.
func (o *Options) chainOptions() dataset.ChainOptions {
	if o.Chains != nil {
		return *o.Chains
	}
	return dataset.DefaultChainOptions()
}

// Build returns the replay plan of every trace, in corpus order (the plan
// of traces[i] has Trace i).
func Build(traces []dataset.Trace, o Options) []*timing.Plan {
	co := o.chainOptions()
	plans := make([]*timing.Plan, len(traces))
	for i := range traces {
		tt := Convert(&traces[i], o.Generation.Layout, co)
		plans[i] = timing.BuildPlan(&tt, i, o.PlanOptions)
	}
	return plans
}

// Convert returns tr in timing's turn model. Under timing.LayoutChains it
// computes the chain layout of the top level (when co.Split and there are
// at least two requests; otherwise the root keeps every request in the
// trace's order, as the loader does) and of every top-level subagent
// entry; under any other layout it computes none.
func Convert(tr *dataset.Trace, layout timing.SessionLayout, co dataset.ChainOptions) timing.Trace {
	out := timing.Trace{ID: tr.ID, ToolTokens: tr.ToolTokens, SystemTokens: tr.SystemTokens,
		Requests: requests(tr.Requests), Subagents: make([]timing.Subagent, len(tr.Subagents))}
	chains := layout == timing.LayoutChains
	if chains && co.Split && len(tr.Requests) >= 2 {
		out.Chains = layoutChains(tr.Requests, tr.ToolTokens, tr.SystemTokens, tr.BlockSize, co)
	}
	for j := range tr.Subagents {
		sa := &tr.Subagents[j]
		entries, reqs := nested(sa.Subagents)
		ts := timing.Subagent{After: sa.After, T: sa.T, Duration: sa.DurationMs / 1000, AgentID: sa.AgentID,
			ToolTokens: sa.ToolTokens, SystemTokens: sa.SystemTokens, Requests: requests(sa.Requests),
			NestedEntries: entries, NestedRequests: reqs}
		if chains {
			ts.Chains = layoutChains(sa.Requests, sa.ToolTokens, sa.SystemTokens, tr.BlockSize, co)
		}
		out.Subagents[j] = ts
	}
	return out
}

// requests returns the recorded times of reqs.
func requests(reqs []dataset.Request) []timing.Request {
	out := make([]timing.Request, len(reqs))
	for i := range reqs {
		r := &reqs[i]
		out[i] = timing.Request{T: r.T, APITime: r.APITime, ThinkTime: r.ThinkTime}
	}
	return out
}

// nested counts the subagent entries of ss, at any depth, and their
// requests.
func nested(ss []dataset.Subagent) (entries, reqs int) {
	for i := range ss {
		e, r := nested(ss[i].Subagents)
		entries += 1 + e
		reqs += len(ss[i].Requests) + r
	}
	return entries, reqs
}

// layoutChains is the chain layout of one list of requests whose
// declared prefix is toolTokens + systemTokens.
func layoutChains(reqs []dataset.Request, toolTokens, systemTokens, blockSize int, co dataset.ChainOptions) *timing.Chains {
	cl := dataset.LayoutChains(reqs, co)
	out := &timing.Chains{Main: cl.Main, Preamble: cl.Preamble >= 0, Seams: cl.Seams}
	for _, w := range cl.Workers {
		tool, system := dataset.ChainPrefixTokens(toolTokens, systemTokens, blockSize, cl.MainFirstHash, firstHash(reqs, w.Reqs))
		out.Workers = append(out.Workers, timing.Chain{Label: w.Label, Reqs: w.Reqs, ToolTokens: tool, SystemTokens: system})
	}
	return out
}

// firstHash is the hash list of the first request of idx that has one.
func firstHash(reqs []dataset.Request, idx []int) []uint32 {
	for _, i := range idx {
		if len(reqs[i].HashIDs) > 0 {
			return reqs[i].HashIDs
		}
	}
	return nil
}

// Requests returns the recorded requests of stream st of a plan of tr, in
// turn order (turn k sends Requests(tr, st)[k]): the root's and a flat
// chain's from tr.Requests, a subagent stream's from its entry's inner
// requests. When the stream holds every request of its list in order (a
// root that was not split) it is that list itself, not a copy.
func Requests(tr *dataset.Trace, st *timing.Stream) []dataset.Request {
	src := tr.Requests
	if st.Kind == timing.SourceSubagent {
		sa := &tr.Subagents[st.Subagent[0]]
		for _, j := range st.Subagent[1:] {
			sa = &sa.Subagents[j]
		}
		src = sa.Requests
	}
	whole := len(st.Turns) == len(src)
	for k := range st.Turns {
		whole = whole && st.Turns[k].Inner == k
	}
	if whole {
		return src
	}
	out := make([]dataset.Request, len(st.Turns))
	for k := range st.Turns {
		out[k] = src[st.Turns[k].Inner]
	}
	return out
}
