package plan

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/internal/numfmt"
	"github.com/agentperf/agentperf/timing"
)

// Session is one conversation of a trace's layout (`agentperf dataset
// plan --format json`).
type Session struct {
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

// Layout is the sessions a generation rebuilds one trace into: one line of
// `agentperf dataset plan --format json`.
type Layout struct {
	TraceID  string    `json:"trace_id"`
	Sessions []Session `json:"sessions"`
	// Seams, Preamble and DroppedSubagents say what else the layout did.
	Seams            int  `json:"seams"`
	SubagentSeams    int  `json:"subagent_seams"`
	Preamble         bool `json:"preamble"`
	DroppedSubagents int  `json:"dropped_subagents"`
}

// Layouts plans every trace with o and calls each with its layout, in
// corpus order; it returns the totals over the corpus (WriteTable), or
// the first error each returned.
func Layouts(traces []dataset.Trace, o Options, each func(*Layout) error) (*Totals, error) {
	co := o.chainOptions()
	tot := &Totals{chains: map[string]int{}}
	for i := range traces {
		tt := Convert(&traces[i], o.Generation.Layout, co)
		p := timing.BuildPlan(&tt, i, o.PlanOptions)
		tot.add(p, len(traces[i].Requests))
		if tt.Chains != nil && tt.Chains.Preamble {
			tot.preamblesAll++
		}
		l := Describe(p)
		if err := each(&l); err != nil {
			return tot, err
		}
	}
	return tot, nil
}

// Describe lists the sessions of plan p.
func Describe(p *timing.Plan) Layout {
	pt := Layout{TraceID: p.TraceID, Seams: p.Seams, SubagentSeams: p.SubagentSeams, Preamble: p.Preamble, DroppedSubagents: p.DroppedSubagents}
	for i := range p.Streams {
		st := &p.Streams[i]
		s := Session{ConversationID: st.ConvID, Label: st.Label, OuterIndices: []int{}}
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

// Totals sums the layouts over a corpus (Layouts).
type Totals struct {
	traces, split, topRequests, moved int
	chains                            map[string]int // by label family
	seams, seamsSplit, subSeams       int
	preambles, preamblesAll           int
	dropped, unusable                 int
	subStreams, subChains             int
	shares                            []float64 // moved share of each trace
}

// labelFamily is the family of a flat chain's label (aux:red:001 → aux:red).
func labelFamily(label string) string {
	for _, f := range []string{"aux:red", "aux", "wg", "fa"} {
		if strings.HasPrefix(label, f+":") {
			return f
		}
	}
	return label
}

// add counts plan p of a trace with topRequests top-level requests.
func (t *Totals) add(p *timing.Plan, topRequests int) {
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

// WriteTable prints one row per trace layout (its root turns, flat
// chains, subagent streams and seams), then the totals t under generation
// gen's name.
func WriteTable(w io.Writer, gen string, rows []Layout, t *Totals) error {
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
	fmt.Fprintf(w, "  requests moved:   %s of %s top-level requests (%.1f %%) leave the root", numfmt.Thousands(t.moved), numfmt.Thousands(t.topRequests), pct(t.moved, t.topRequests))
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
