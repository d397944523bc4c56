package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSynthesizeWithoutSubagentsUnchanged pins the corpora that seeds
// name without subagents: a benchmark that quotes "synthetic:seed=7" must
// keep replaying the same requests across agentperf versions. (An
// intentional change of the generator updates these digests and says so
// in its commit.)
func TestSynthesizeWithoutSubagentsUnchanged(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		opt  SynthOptions
		want string
	}{
		{SynthOptions{Traces: 40}, "5d6876138c7a515fb87564587e81e4b94ffa8fe5d3e0234f89e649e86e239839"},
		{SynthOptions{Seed: 7, Traces: 100}, "e04ca7b3a83f5a9e14ebc4b6a02a0e76c3c41b14887b1983b835c1e0796e2927"},
		{SynthOptions{Traces: 40, MaxContext: 32768, MinTurns: 10, MaxTurns: 20, TimeScale: 0.1}, "8033a72ddf02302265091c7c7b98adb80f6ef7210fff60be9b2824f275bf9b17"},
		{SynthOptions{Seed: 3, Traces: 40, MinTurns: 4, MaxTurns: 9, TimeScale: 0.0005}, "c6d145b5701f6ccdc0a6ce60bba9c3503d9a537c37ce11cbe8f2c34ae8aec742"},
	} {
		sum := sha256.Sum256(synthBytes(t, c.opt))
		if got := hex.EncodeToString(sum[:]); got != c.want {
			t.Errorf("%+v: corpus sha256 %s, want %s: the corpus this seed names has changed", c.opt, got, c.want)
		}
	}
}

// synthTrees is what TestSynthesizeSubagentTrees measures over a corpus.
type synthTrees struct {
	traces, withSubs                  int
	parentReqs, subReqs, anchorlessRq int
	entries, joins, async, trailing   int
	anchorless, groups, multiGroups   int
	asyncOverlapParent                int
	overlapping, gpShared             int
	in, firstIn, out, finalOut, think []float64
	duration, inner                   []float64
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// measureTrees checks the invariants of every subagent of traces (they
// hold for any options) and collects the statistics the shape tests bound.
func measureTrees(t *testing.T, traces []Trace, opt SynthOptions) synthTrees {
	t.Helper()
	opt = opt.withDefaults()
	var m synthTrees
	const eps = 1e-9
	for i := range traces {
		tr := &traces[i]
		m.traces++
		m.parentReqs += len(tr.Requests)
		if len(tr.Subagents) > 0 {
			m.withSubs++
		}
		// every request start of a trace is distinct: a total order
		starts := map[float64]bool{}
		mark := func(r *Request) {
			if starts[r.T] {
				t.Fatalf("trace %s: two requests start at %v", tr.ID, r.T)
			}
			starts[r.T] = true
		}
		for k := range tr.Requests {
			mark(&tr.Requests[k])
			if k > 0 && len(tr.Subagents) > 0 {
				// (traces without subagents are the plain generator's)
				p := &tr.Requests[k-1]
				if got, want := tr.Requests[k].ThinkTime, tr.Requests[k].T-(p.T+p.APITime); math.Abs(got-want) > 1e-6 {
					t.Fatalf("trace %s request %d: think_time %v, want the gap %v since the previous parent request ended", tr.ID, k, got, want)
				}
			}
		}
		usesSubModel := false
		firstOfKind := map[string]*Subagent{}
		for j := range tr.Subagents {
			s := &tr.Subagents[j]
			m.entries++
			m.subReqs += len(s.Requests)
			m.inner = append(m.inner, float64(len(s.Requests)))
			if len(s.Requests) < 2 || len(s.Subagents) != 0 || s.AgentID != fmt.Sprintf("agent_%03d", j+1) {
				t.Fatalf("trace %s entry %d: %d requests, %d nested, id %q", tr.ID, j, len(s.Requests), len(s.Subagents), s.AgentID)
			}
			if j == 0 || tr.Subagents[j-1].After != s.After {
				m.groups++
			} else {
				if j == 1 || tr.Subagents[j-2].After != s.After {
					m.multiGroups++
				}
				if s.T-tr.Subagents[j-1].T > opt.TimeScale+0.001 || s.T <= tr.Subagents[j-1].T {
					t.Errorf("trace %s: siblings %s and %s spawn %v s apart", tr.ID, tr.Subagents[j-1].AgentID, s.AgentID, s.T-tr.Subagents[j-1].T)
				}
			}
			// models by type
			wantModel := opt.Model
			if s.SubagentType == "Explore" {
				wantModel, usesSubModel = opt.SubagentModel, true
			}
			if !slices.Equal(s.Models, []string{wantModel}) {
				t.Errorf("trace %s %s (%s): models %v", tr.ID, s.AgentID, s.SubagentType, s.Models)
			}
			// inner requests: chronological, after the spawn, distinct starts
			var end float64
			for k := range s.Requests {
				r := &s.Requests[k]
				mark(r)
				if r.Model != wantModel || r.In < 0 || len(r.HashIDs) != r.In/64 {
					t.Fatalf("trace %s %s request %d: model %s, in %d, %d hash ids", tr.ID, s.AgentID, k, r.Model, r.In, len(r.HashIDs))
				}
				if r.T < s.T || (k > 0 && r.T <= s.Requests[k-1].T) {
					t.Fatalf("trace %s %s request %d starts at %v (entry %v, previous %v)", tr.ID, s.AgentID, k, r.T, s.T, s.Requests[max(0, k-1)].T)
				}
				end = max(end, r.T+r.APITime)
				m.in = append(m.in, float64(r.In))
				if k == 0 {
					m.firstIn = append(m.firstIn, float64(r.In))
				} else {
					m.think = append(m.think, r.ThinkTime)
				}
				if r.Stop == "end_turn" {
					m.finalOut = append(m.finalOut, float64(r.Out))
				} else {
					m.out = append(m.out, float64(r.Out))
				}
			}
			// overlapping requests are different conversations: the later
			// one does not extend the earlier one's context
			overlap := false
			for k := 1; k < len(s.Requests); k++ {
				a, b := &s.Requests[k-1], &s.Requests[k]
				if b.T < a.T+a.APITime-eps {
					overlap = true
					if lcp(a.HashIDs, b.HashIDs) >= len(a.HashIDs)-1 && len(a.HashIDs) > 0 {
						t.Errorf("trace %s %s: overlapping requests %d and %d are one conversation", tr.ID, s.AgentID, k-1, k)
					}
				}
			}
			if overlap {
				m.overlapping++
			}
			// the spawn: after the parent request that issued it ended
			if s.After > 0 {
				p := &tr.Requests[s.After-1]
				if s.T < p.T+p.APITime-eps || p.Stop != "tool_use" {
					t.Errorf("trace %s %s spawned at %v by request %d that ends at %v with stop %q", tr.ID, s.AgentID, s.T, s.After-1, p.T+p.APITime, p.Stop)
				}
			}
			switch {
			case s.After == 0:
				m.anchorless++
				m.anchorlessRq += len(s.Requests)
				if s.T+s.DurationMs/1000 > tr.Requests[0].T {
					t.Errorf("trace %s: anchorless %s ends after the first parent request starts", tr.ID, s.AgentID)
				}
			case s.Status == "async_launched":
				m.async++
				if !math.IsNaN(s.DurationMs) || s.TotalTokens != 0 || s.After == len(tr.Requests) {
					t.Errorf("trace %s: background %s: duration %v, total %d, after %d of %d", tr.ID, s.AgentID, s.DurationMs, s.TotalTokens, s.After, len(tr.Requests))
				}
				if next := tr.Requests[s.After].T; next < s.T {
					t.Errorf("trace %s: the parent resumes at %v, before %s is launched at %v", tr.ID, next, s.AgentID, s.T)
				} else if next < end {
					m.asyncOverlapParent++
				}
			case s.After == len(tr.Requests):
				m.trailing++
			default:
				m.joins++
			}
			if s.Status != "async_launched" {
				if s.Status != "completed" || !(s.DurationMs/1000 >= end-s.T-eps) || s.TotalTokens <= 0 {
					t.Errorf("trace %s %s: status %q, duration %v ms, requests end %v s after the spawn", tr.ID, s.AgentID, s.Status, s.DurationMs, end-s.T)
				}
				m.duration = append(m.duration, s.DurationMs/1000)
				if s.After < len(tr.Requests) && tr.Requests[s.After].T < s.T+s.DurationMs/1000+eps {
					t.Errorf("trace %s: parent request %d starts at %v, before %s ends at %v", tr.ID, s.After, tr.Requests[s.After].T, s.AgentID, s.T+s.DurationMs/1000)
				}
			}
			// hash ids: the type's prefix is shared by every request of
			// every child of that type; only general-purpose children share
			// the parent's (tool) prefix
			pre := (s.ToolTokens + s.SystemTokens) / 64
			f := firstOfKind[s.SubagentType]
			if f == nil {
				firstOfKind[s.SubagentType], f = s, s
			}
			if s.ToolTokens != f.ToolTokens || s.SystemTokens != f.SystemTokens {
				t.Errorf("trace %s: %s children differ in prompt sizes", tr.ID, s.SubagentType)
			}
			for k := range s.Requests {
				if n := lcp(s.Requests[k].HashIDs, f.Requests[0].HashIDs); n < min(pre, len(s.Requests[k].HashIDs)) {
					t.Fatalf("trace %s %s request %d shares %d blocks with the first %s child, want its %d prefix blocks", tr.ID, s.AgentID, k, n, s.SubagentType, pre)
				}
			}
			shared := lcp(s.Requests[0].HashIDs, tr.Requests[0].HashIDs)
			switch {
			case s.SubagentType == "general-purpose":
				if shared > 0 {
					m.gpShared++
				}
				if shared > tr.ToolTokens/64 {
					t.Errorf("trace %s %s shares %d parent blocks, more than the parent's tools", tr.ID, s.AgentID, shared)
				}
			case shared > 0:
				t.Errorf("trace %s %s (%s) shares %d blocks with the parent", tr.ID, s.AgentID, s.SubagentType, shared)
			}
		}
		if usesSubModel != slices.Contains(tr.Models, opt.SubagentModel) || tr.Models[0] != opt.Model {
			t.Errorf("trace %s: models %v, subagent model used: %v", tr.ID, tr.Models, usesSubModel)
		}
	}
	return m
}

func (m synthTrees) share() float64 {
	return float64(m.subReqs) / float64(m.subReqs+m.parentReqs)
}

// TestSynthesizeSubagentTrees checks that synthetic:subagents=true has
// every subagent shape the tree replay handles, in proportions near the
// recorded corpora.
func TestSynthesizeSubagentTrees(t *testing.T) {
	t.Parallel()
	opt := SynthOptions{Seed: 42, Traces: 300, Subagents: true}
	m := measureTrees(t, Synthesize(opt), opt)
	t.Logf("%d traces (%d with subagents), %d+%d requests, %d entries in %d groups (%d multi-child): %d joins, %d background, %d trailing, %d anchorless, %d with overlapping requests",
		m.traces, m.withSubs, m.parentReqs, m.subReqs, m.entries, m.groups, m.multiGroups, m.joins, m.async, m.trailing, m.anchorless, m.overlapping)
	in := func(what string, x, lo, hi float64) {
		t.Helper()
		if !(x >= lo && x <= hi) {
			t.Errorf("%s = %.4g, want [%g, %g]", what, x, lo, hi)
		}
	}
	in("share of requests in subagents", m.share(), 0.34, 0.46)
	in("share of traces with subagents", float64(m.withSubs)/float64(m.traces), 0.7, 0.9)
	in("subagents per trace with subagents", float64(m.entries)/float64(m.withSubs), 2, 6)
	in("share of entries that are joins", float64(m.joins)/float64(m.entries), 0.6, 0.95)
	in("share of entries launched in the background", float64(m.async)/float64(m.entries), 0.03, 0.15)
	in("share of background entries that overlap the parent", float64(m.asyncOverlapParent)/float64(max(1, m.async)), 0.5, 1)
	in("share of entries after the last parent request", float64(m.trailing)/float64(m.entries), 0.01, 0.1)
	in("anchorless entries", float64(m.anchorless), 1, 0.02*float64(m.entries))
	in("share of subagent requests dropped as anchorless", float64(m.anchorlessRq)/float64(m.subReqs), 0, 0.02)
	in("share of groups with several children", float64(m.multiGroups)/float64(m.groups), 0.08, 0.35)
	in("share of entries with overlapping requests", float64(m.overlapping)/float64(m.entries), 0.1, 0.35)
	in("general-purpose children sharing the parent's tool blocks", float64(m.gpShared), 1, math.Inf(1))
	in("median inner requests per entry", median(m.inner), 6, 16)
	in("median subagent ISL", median(m.in), 20000, 90000)
	in("median first subagent ISL", median(m.firstIn), 8000, 16000)
	in("median subagent OSL", median(m.out), 120, 400)
	in("median final subagent OSL", median(m.finalOut), 1000, 5000)
	in("median subagent think time s", median(m.think), 2, 5)
	in("median subagent duration s", median(m.duration), 40, 200)
}

// TestSynthesizeSubagentShare checks that the share option moves the share
// of subagent requests to about its value.
func TestSynthesizeSubagentShare(t *testing.T) {
	t.Parallel()
	for _, share := range []float64{0.15, 0.4, 0.6} {
		opt := SynthOptions{Seed: 5, Traces: 300, Subagents: true, SubagentShare: share}
		if share == DefaultSubagentShare {
			opt.SubagentShare = 0
		}
		m := measureTrees(t, Synthesize(opt), opt)
		if got := m.share(); math.Abs(got-share) > 0.06 {
			t.Errorf("subagent-share %v: %.3f of the requests are in subagents", share, got)
		}
	}
}

// TestSynthesizeSubagentsKeepParents checks that subagents only add
// children and move the parent requests in time: the parent conversation is
// the one of the corpus without subagents.
func TestSynthesizeSubagentsKeepParents(t *testing.T) {
	t.Parallel()
	plain := Synthesize(SynthOptions{Seed: 4, Traces: 30})
	with := Synthesize(SynthOptions{Seed: 4, Traces: 30, Subagents: true})
	moved := 0
	for i := range plain {
		a, b := plain[i].Requests, with[i].Requests
		if len(a) != len(b) {
			t.Fatalf("trace %d: %d parent requests, %d with subagents", i, len(a), len(b))
		}
		for k := range a {
			x, y := &a[k], &b[k]
			if x.In != y.In || x.Out != y.Out || !slices.Equal(x.HashIDs, y.HashIDs) || x.APITime != y.APITime || !feq(x.TTFT, y.TTFT) || x.Type != y.Type {
				t.Fatalf("trace %d request %d differs beyond its timing", i, k)
			}
			if y.T != x.T {
				moved++
			}
		}
		if len(with[i].Subagents) == 0 && diffTrace(&plain[i], &with[i]) != "" {
			t.Errorf("trace %d has no subagents but differs from the plain corpus", i)
		}
	}
	if moved == 0 {
		t.Error("no parent request waited for a subagent")
	}
}

// TestSynthesizeSubagentOptions checks, for option sets at their edges,
// that the corpus with subagents is deterministic, keeps every invariant,
// respects max-context and survives the write → read validation.
func TestSynthesizeSubagentOptions(t *testing.T) {
	t.Parallel()
	for _, opt := range []SynthOptions{
		{Seed: 1, Traces: 30, Subagents: true},
		{Seed: 2, Traces: 30, Subagents: true, SubagentShare: MaxSubagentShare},
		{Seed: 3, Traces: 30, Subagents: true, SubagentShare: 0.01},
		{Seed: 4, Traces: 30, Subagents: true, MinTurns: 1, MaxTurns: 2},
		{Seed: 5, Traces: 30, Subagents: true, MinTurns: 4, MaxTurns: 8, TimeScale: 0.0001},
		{Seed: 6, Traces: 20, Subagents: true, MaxContext: 8192, MinTurns: 5, MaxTurns: 30},
		{Seed: 7, Traces: 10, Subagents: true, MaxContext: 32768, TimeScale: 50},
		{Seed: -8, Traces: 10, Subagents: true, Model: "m", SubagentModel: "s"},
	} {
		t.Run(fmt.Sprintf("%+v", opt), func(t *testing.T) {
			t.Parallel()
			traces := Synthesize(opt)
			measureTrees(t, traces, opt)
			if mc := opt.MaxContext; mc > 0 {
				for i := range traces {
					if p := traces[i].PeakContext(0); p > mc {
						t.Errorf("trace %s peak context %d > %d", traces[i].ID, p, mc)
					}
				}
			}
			var b bytes.Buffer
			if err := WriteJSONL(&b, traces); err != nil {
				t.Fatal(err)
			}
			if again := synthBytes(t, opt); !bytes.Equal(again, b.Bytes()) {
				t.Fatal("same options gave different corpora")
			}
			got, _, err := ReadJSONL(bytes.NewReader(b.Bytes()), "synth.jsonl", ReadOptions{})
			if err != nil {
				t.Fatalf("the corpus does not validate: %v", err)
			}
			for i := range traces {
				if d := diffTrace(&got[i], &traces[i]); d != "" {
					t.Fatalf("trace %d after write → read: %s", i, d)
				}
			}
		})
	}
}

// TestSynthesizeSubagentsDeterministic checks that the seed alone decides
// the corpus with subagents, trace by trace.
func TestSynthesizeSubagentsDeterministic(t *testing.T) {
	t.Parallel()
	opt := SynthOptions{Seed: 9, Traces: 12, Subagents: true, SubagentShare: 0.5}
	a := synthBytes(t, opt)
	if !bytes.Equal(a, synthBytes(t, opt)) {
		t.Fatal("same seed gave different corpora")
	}
	opt.Traces = 5
	if !bytes.HasPrefix(a, synthBytes(t, opt)) {
		t.Error("a 5-trace corpus is not a prefix of the 12-trace one")
	}
	opt.Traces, opt.Seed = 12, 10
	if bytes.Equal(a, synthBytes(t, opt)) {
		t.Error("different seeds gave the same corpus")
	}
}

func TestParseSyntheticSubagentShare(t *testing.T) {
	t.Parallel()
	o, ok, err := ParseSynthetic("synthetic:subagent-share=0.25,subagents=true")
	if err != nil || !ok || !o.Subagents || o.SubagentShare != 0.25 {
		t.Fatalf("got %+v, %v, %v", o, ok, err)
	}
	for _, bad := range []string{
		"synthetic:subagent-share=0.3", // subagents off
		"synthetic:subagents=true,subagent-share=0.3,subagents=false",
		"synthetic:subagents=true,subagent-share=0",
		"synthetic:subagents=true,subagent-share=0.95",
		"synthetic:subagents=true,subagent-share=NaN",
		"synthetic:subagents=true,subagent-share=x",
		"synthetic:time-scale=Inf",
		"synthetic:time-scale=1e9",
		"synthetic:min-turns=10,max-turns=5",
	} {
		if o, ok, err := ParseSynthetic(bad); err == nil || !ok {
			t.Errorf("%s: got %+v, %v, %v; want an error", bad, o, ok, err)
		} else if !strings.Contains(err.Error(), "expected synthetic:") {
			t.Errorf("%s: error %q does not say what is expected", bad, err)
		}
	}
}

// formatSynthetic is the synthetic:… string of o (non-zero keys only).
func formatSynthetic(o SynthOptions) string {
	var kv []string
	add := func(k, v string) { kv = append(kv, k+"="+v) }
	if o.Seed != 0 {
		add("seed", strconv.FormatInt(o.Seed, 10))
	}
	if o.Traces != 0 {
		add("traces", strconv.Itoa(o.Traces))
	}
	if o.Subagents {
		add("subagents", "true")
	}
	if o.SubagentShare != 0 {
		add("subagent-share", strconv.FormatFloat(o.SubagentShare, 'g', -1, 64))
	}
	if o.MinTurns != 0 {
		add("min-turns", strconv.Itoa(o.MinTurns))
	}
	if o.MaxTurns != 0 {
		add("max-turns", strconv.Itoa(o.MaxTurns))
	}
	if o.MaxContext != 0 {
		add("max-context", strconv.Itoa(o.MaxContext))
	}
	if o.TimeScale != 0 {
		add("time-scale", strconv.FormatFloat(o.TimeScale, 'g', -1, 64))
	}
	if len(kv) == 0 {
		return "synthetic"
	}
	return "synthetic:" + strings.Join(kv, ",")
}

// FuzzParseSynthetic checks that ParseSynthetic never panics, accepts only
// options in their documented ranges, reads back what it accepted, and
// that every accepted option set generates a corpus the reader accepts.
func FuzzParseSynthetic(f *testing.F) {
	for _, s := range []string{
		"synthetic", "synthetic:", "synthetic:subagents=true", "synthetic:seed=-3,traces=2,subagents=1,subagent-share=0.8",
		"synthetic:min-turns=1,max-turns=1,max-context=1,time-scale=1000", "synthetic:time-scale=1e-9", "syntheticx", "weka_trace",
		"synthetic:traces=0", "synthetic:=,", "synthetic:subagent-share=0.5",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, ok, err := ParseSynthetic(s)
		if !ok {
			if err != nil || s == "synthetic" || strings.HasPrefix(s, "synthetic:") {
				t.Fatalf("%q: ok=false, err %v", s, err)
			}
			return
		}
		if err != nil {
			if o != (SynthOptions{}) {
				t.Fatalf("%q: error %v with options %+v", s, err, o)
			}
			return
		}
		switch {
		case o.Traces < 0, o.MinTurns < 0, o.MaxTurns < 0, o.MaxContext < 0:
			t.Fatalf("%q: negative count in %+v", s, o)
		case o.MinTurns > 0 && o.MaxTurns > 0 && o.MinTurns > o.MaxTurns:
			t.Fatalf("%q: min-turns above max-turns", s)
		case o.TimeScale != 0 && !(o.TimeScale > 0 && o.TimeScale <= MaxSynthTimeScale):
			t.Fatalf("%q: time-scale %v", s, o.TimeScale)
		case o.SubagentShare != 0 && !(o.Subagents && o.SubagentShare > 0 && o.SubagentShare <= MaxSubagentShare):
			t.Fatalf("%q: subagent-share %v (subagents %v)", s, o.SubagentShare, o.Subagents)
		}
		back, ok, err := ParseSynthetic(formatSynthetic(o))
		if !ok || err != nil || back != o {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, o, formatSynthetic(o), back, err)
		}
		// small enough to generate on every input
		o.Traces = min(max(o.Traces, 1), 2)
		o.MinTurns, o.MaxTurns = min(o.MinTurns, 6), min(o.MaxTurns, 6)
		var b bytes.Buffer
		if err := WriteJSONL(&b, Synthesize(o)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ReadJSONL(&b, "synth.jsonl", ReadOptions{}); err != nil {
			t.Fatalf("%q: the generated corpus does not validate: %v", s, err)
		}
	})
}
