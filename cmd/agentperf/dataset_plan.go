package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/agentperf/agentperf/plan"
	"github.com/agentperf/agentperf/profile"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/timing"
)

func init() {
	registerDataset(command{name: "plan", summary: "print how a generation rebuilds each trace into sessions (root, flat chains, subagents), before any request is sent", run: runDatasetPlan})
}

const datasetPlanExamples = `  # the sessions AgentX v1.0 (the default) replays, and the totals
  agentperf dataset plan --input-file traces.jsonl.zst

  # one JSON object per trace
  agentperf dataset plan --input-file traces.jsonl.zst --format json | jq -c '.sessions[] | select(.kind == "flat")'

  # the loader's escape hatch: every top-level request in the root
  AIPERF_DATASET_WEKA_SPLIT_FLATTENED_AGENTS=false agentperf dataset plan --input-file traces.jsonl.zst

  # what v0.3 replayed
  agentperf dataset plan --input-file traces.jsonl.zst --scenario inferencex-agentx-mvp@v0.3

The corpus is opened and selected like 'agentperf profile' opens it (same flags, same dataset
cache); the generation comes from --scenario NAME@GEN, --agentx-generation or $` + envGeneration + `,
and v1.0's session layout from the AIPERF_DATASET_WEKA_* variables (docs/replay.md).`

// planSession is one conversation of a trace's plan in --format json.
type planSession struct {
	ConversationID string `json:"conversation_id"`
	// Kind is root, flat or subagent.
	Kind  string `json:"kind"`
	Label string `json:"label"`
	// OuterIndices are the positions of the session's requests in the
	// trace's requests list (subagent entries counted); for a subagent's
	// session, the entry's position alone, its requests being
	// InnerIndices (positions in the entry's requests list).
	OuterIndices []int `json:"outer_indices"`
	InnerIndices []int `json:"inner_indices,omitempty"`
	// SpawnTurn and JoinTurn are the root turns that spawn and join the
	// session (null for the root; JoinTurn null for a background one).
	SpawnTurn  *int `json:"spawn_turn"`
	JoinTurn   *int `json:"join_turn"`
	Background bool `json:"background"`
}

// planTrace is one line of --format json.
type planTrace struct {
	TraceID  string        `json:"trace_id"`
	Sessions []planSession `json:"sessions"`
	// Seams, Preamble and DroppedSubagents say what else the layout did.
	Seams            int  `json:"seams"`
	SubagentSeams    int  `json:"subagent_seams"`
	Preamble         bool `json:"preamble"`
	DroppedSubagents int  `json:"dropped_subagents"`
}

func runDatasetPlan(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("dataset plan", "dataset plan (--input-file PATH | --public-dataset ALIAS | --hf-dataset ORG/NAME[@REV]) [flags]", datasetPlanExamples, io.err)
	df := addDatasetFlags(fs)
	scen := fs.String("scenario", "", "the scenario preset NAME[@GEN] whose generation to show (e.g. "+scenario.NameAgentXMVP+"@v0.3)")
	gen := fs.String("agentx-generation", "", "the AgentX generation: "+strings.Join(timing.GenerationNames(), ", ")+" (default "+timing.DefaultGeneration+"; also $"+envGeneration+")")
	idleCap := fs.Float64("trace-idle-gap-cap-seconds", -1, "v0.3's trace idle-gap warp, which moves its joins (default: the generation's, 60 for v0.3)")
	format := fs.String("format", "table", "output format: table or json (one object per trace)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("dataset plan: unexpected argument %q (pass the corpus with --input-file)", fs.Arg(0))
	}
	if *format != "table" && *format != "json" {
		return usagef("dataset plan: --format %q: use table or json", *format)
	}
	g, err := planGeneration(*scen, *gen, df.getenv(envGeneration))
	if err != nil {
		return err
	}
	chains, err := profile.ChainOptionsFromEnv(df.getenv)
	if err != nil {
		return asUsage(err)
	}
	opt := timing.PlanOptions{Generation: g, IdleGapCap: g.DefaultTraceIdleGapCap}
	if *idleCap >= 0 {
		opt.IdleGapCap = seconds(*idleCap)
	}
	if g.Takes.InterTurnDelayCap {
		opt.InterTurnDelayCap = timing.DefaultInterTurnDelayCap
	}
	corpus, err := df.open(ctx, io)
	if err != nil {
		return err
	}
	defer corpus.Close()
	traces := corpus.Traces()
	var tot planTotals
	var rows []planTrace
	enc := json.NewEncoder(io.out)
	for i := range traces {
		tt := plan.Convert(&traces[i], g.Layout, chains)
		p := timing.BuildPlan(&tt, i, opt)
		pt := describeTracePlan(p)
		tot.add(p, len(traces[i].Requests))
		if tt.Chains != nil && tt.Chains.Preamble {
			tot.preamblesAll++
		}
		if *format == "json" {
			if err := enc.Encode(pt); err != nil {
				return fmt.Errorf("dataset plan: %w", err)
			}
			continue
		}
		rows = append(rows, pt)
	}
	if *format == "json" {
		return nil
	}
	return writePlanTable(io.out, g.Name, rows, &tot)
}

// planGeneration resolves the generation as profile does: --scenario
// NAME@GEN, --agentx-generation and $AGENTPERF_AGENTX_GENERATION must
// agree; none gives the default.
func planGeneration(scen, flag, env string) (timing.Generation, error) {
	if flag != "" && env != "" && flag != env {
		return timing.Generation{}, usagef("--agentx-generation %s and %s=%s disagree: set the AgentX generation once", flag, envGeneration, env)
	}
	name := flag
	if name == "" {
		name = env
	}
	if scen != "" {
		p, err := scenario.LookupAt(scen, name)
		if err != nil {
			return timing.Generation{}, asUsage(err)
		}
		return p.Generation, nil
	}
	g, err := timing.LookupGeneration(name)
	if err != nil {
		return timing.Generation{}, asUsage(err)
	}
	return g, nil
}

// describeTracePlan lists the sessions of plan p.
func describeTracePlan(p *timing.Plan) planTrace {
	pt := planTrace{TraceID: p.TraceID, Seams: p.Seams, SubagentSeams: p.SubagentSeams, Preamble: p.Preamble, DroppedSubagents: p.DroppedSubagents}
	for i := range p.Streams {
		st := &p.Streams[i]
		s := planSession{ConversationID: st.ConvID, Label: st.Label, OuterIndices: []int{}}
		switch {
		case st.Parent < 0:
			s.Kind = "root"
		case st.Kind == timing.SourceFlat:
			s.Kind = "flat"
		default:
			s.Kind = "subagent"
			s.InnerIndices = []int{}
		}
		for _, tn := range st.Turns {
			if s.Kind == "subagent" {
				s.InnerIndices = append(s.InnerIndices, tn.Inner)
				continue
			}
			s.OuterIndices = append(s.OuterIndices, tn.OuterIdx)
		}
		if s.Kind == "subagent" && len(st.Turns) > 0 {
			s.OuterIndices = []int{st.Turns[0].OuterIdx}
		}
		if st.Branch >= 0 {
			b := &p.Branches[st.Branch]
			spawn := b.SpawnTurn
			s.SpawnTurn = &spawn
			if b.JoinTurn >= 0 {
				join := b.JoinTurn
				s.JoinTurn = &join
			}
			s.Background = b.Background()
		}
		pt.Sessions = append(pt.Sessions, s)
	}
	return pt
}

// planTotals sums the layout over the corpus.
type planTotals struct {
	traces, split, topRequests, moved int
	chains                            map[string]int // by label family
	seams, seamsSplit, subSeams       int
	preambles, preamblesAll           int
	dropped, unusable                 int
	subStreams, subChains             int
	shares                            []float64 // moved share of each trace
}

func labelFamily(label string) string {
	for _, f := range []string{"aux:red", "aux", "wg", "fa"} {
		if strings.HasPrefix(label, f+":") {
			return f
		}
	}
	return label
}

func (t *planTotals) add(p *timing.Plan, topRequests int) {
	if t.chains == nil {
		t.chains = map[string]int{}
	}
	t.traces++
	t.topRequests += topRequests
	t.seams += p.Seams
	t.subSeams += p.SubagentSeams
	t.dropped += p.DroppedSubagents
	if len(p.Streams[0].Turns) < 2 {
		t.unusable++
	}
	moved := 0
	for i := 1; i < len(p.Streams); i++ {
		st := &p.Streams[i]
		switch {
		case st.Kind == timing.SourceFlat:
			t.chains[labelFamily(st.Label)]++
			moved += len(st.Turns)
		case st.Label != "":
			t.subChains++
		default:
			t.subStreams++
		}
	}
	if topRequests > 0 {
		t.shares = append(t.shares, float64(moved)/float64(topRequests))
	}
	if moved > 0 {
		t.split++
		t.moved += moved
		t.seamsSplit += p.Seams
		if p.Preamble {
			t.preambles++
		}
	}
}

func writePlanTable(w io.Writer, gen string, rows []planTrace, t *planTotals) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "trace\troot turns\tflat chains\tsubagent streams\tseams\n")
	for _, r := range rows {
		var root int
		var flat []string
		sub := 0
		for _, s := range r.Sessions {
			switch s.Kind {
			case "root":
				root = len(s.OuterIndices)
			case "flat":
				flat = append(flat, fmt.Sprintf("%s(%d)", s.Label, len(s.OuterIndices)))
			default:
				sub++
			}
		}
		fl := "-"
		if len(flat) > 0 {
			fl = strings.Join(flat, " ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\n", r.TraceID, root, fl, sub, r.Seams)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var keys []string
	n := 0
	for f, c := range t.chains {
		keys = append(keys, f)
		n += c
	}
	sort.Slice(keys, func(a, b int) bool {
		if ca, cb := t.chains[keys[a]], t.chains[keys[b]]; ca != cb {
			return ca > cb
		}
		return keys[a] < keys[b]
	})
	var fams []string
	for _, f := range keys {
		fams = append(fams, fmt.Sprintf("%d %s", t.chains[f], f))
	}
	pct := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return 100 * float64(a) / float64(b)
	}
	fmt.Fprintf(w, "\nAgentX %s session layout of %d traces:\n", gen, t.traces)
	fmt.Fprintf(w, "  traces split:     %d of %d\n", t.split, t.traces)
	if n > 0 {
		fmt.Fprintf(w, "  flat chains:      %d (%s)\n", n, strings.Join(fams, ", "))
	} else {
		fmt.Fprintf(w, "  flat chains:      0\n")
	}
	fmt.Fprintf(w, "  seams merged:     %d in split traces (%d in all traces)\n", t.seamsSplit, t.seams)
	fmt.Fprintf(w, "  preambles:        %d set aside in split traces (%d in all traces)\n", t.preambles, t.preamblesAll)
	fmt.Fprintf(w, "  requests moved:   %s of %s top-level requests (%.1f %%) leave the root", groupInt(t.moved), groupInt(t.topRequests), pct(t.moved, t.topRequests))
	if len(t.shares) > 0 {
		sort.Float64s(t.shares)
		p90 := t.shares[int(math.Ceil(0.9*float64(len(t.shares))))-1]
		fmt.Fprintf(w, "; per trace p90 %.1f %%, max %.1f %%", 100*p90, 100*t.shares[len(t.shares)-1])
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  subagents:        %d main streams, %d more chains or siblings, %d subagent seams, %d entries dropped\n", t.subStreams, t.subChains, t.subSeams, t.dropped)
	if t.unusable > 0 {
		fmt.Fprintf(w, "  unusable:         %d traces have a root of fewer than 2 turns (no lane starts them)\n", t.unusable)
	}
	return nil
}
