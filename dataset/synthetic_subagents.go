package dataset

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

const (
	// DefaultSubagentShare is SynthOptions.SubagentShare when it is 0: the
	// share of requests inside subagent entries on the published
	// with-subagents corpora (about 40 %).
	DefaultSubagentShare = 0.4
	// MaxSubagentShare is the largest SynthOptions.SubagentShare honoured.
	MaxSubagentShare = 0.8

	synthPTraceWithSubagents = 0.8  // traces that spawn any subagent
	synthPAnchorless         = 0.03 // traces with a child before their first parent request
	synthPTrailing           = 0.12 // traces with a group after their last parent request
	synthPAsync              = 0.1  // join-position groups launched in the background
	synthPFanOut             = 0.2  // children whose requests run in parallel chains
)

// synthAgentKind is one subagent type of the generator.
type synthAgentKind struct {
	name        string
	p           float64 // share of the children
	parentModel bool    // runs on SynthOptions.Model (else SubagentModel)
	parentTools bool    // carries most of the parent's tool definitions
	tool        float64 // median tool tokens (when not derived from the parent)
	system      float64 // median system tokens
}

var synthAgentKinds = [...]synthAgentKind{
	{name: "Explore", p: 0.7, tool: 7750, system: 950},
	{name: "general-purpose", p: 0.2, parentModel: true, parentTools: true, system: 900},
	{name: "Plan", p: 0.1, parentModel: true, tool: 7750, system: 1150},
}

// synthChild is the plan of one child: its type, the length of its main
// chain and of its parallel worker chains (none for most children).
type synthChild struct {
	kind    int
	main    int
	workers []int
}

// synthGroup is children spawned together after parent request at (-1:
// before the first one).
type synthGroup struct {
	at       int
	async    bool
	children []synthChild
}

// synthBase is the prefix every first request of one subagent type in a
// trace starts with.
type synthBase struct {
	tool, system int
	tokens       int      // tool + system + environment preamble
	ids          []uint32 // its full blocks
}

// synthChain is one sequential conversation inside a subagent.
type synthChain struct {
	store idStore
	ids   []uint32
	in    int
	out   int
	end   int64 // end of the last request, ms
	reqs  []Request
}

// subGen generates the subagents of one trace on a millisecond timeline.
type subGen struct {
	s     *synthState
	rng   *rand.Rand
	opt   SynthOptions
	t     *Trace
	used  map[int64]bool // request starts already taken, ms
	bases [len(synthAgentKinds)]*synthBase
	maxIn int
	agent int
}

func msOf(sec float64) int64            { return int64(math.Round(sec * 1000)) }
func secOf(ms int64) float64            { return float64(ms) / 1000 }
func (g *subGen) dur(sec float64) int64 { return max(1, msOf(sec*g.opt.TimeScale)) }

// claim returns the first free millisecond at or after ms and takes it.
func (g *subGen) claim(ms int64) int64 {
	for g.used[ms] {
		ms++
	}
	g.used[ms] = true
	return ms
}

// addSubagents plans and generates t's subagents and moves its parent
// requests in time around them.
func (s *synthState) addSubagents(t *Trace, rng *rand.Rand) {
	g := &subGen{s: s, rng: rng, opt: s.opt, t: t, used: map[int64]bool{}, maxIn: 180000}
	if mc := s.opt.MaxContext; mc > 0 {
		g.maxIn = min(g.maxIn, mc*8/10)
	}
	groups := g.plan(len(t.Requests))
	if len(groups) == 0 {
		return
	}
	reqs := t.Requests
	var lower, prevEnd int64 // earliest start of the next parent request; end of the previous one
	gi := 0
	if groups[0].at < 0 {
		end, _ := g.group(&groups[0], 0, 0)
		lower = end + g.dur(clampF(lognormal(rng, 8, 0.9), 0.5, 900))
		gi++
	}
	for k := range reqs {
		r := &reqs[k]
		var start int64
		if k == 0 {
			start = g.claim(lower)
		} else {
			start = g.claim(max(lower, prevEnd+max(1, msOf(r.ThinkTime))))
			r.ThinkTime = secOf(start - prevEnd)
		}
		r.T = secOf(start)
		prevEnd = start + msOf(r.APITime)
		lower = 0
		if gi == len(groups) || groups[gi].at != k {
			continue
		}
		gr := &groups[gi]
		gi++
		// the request issued the Task call(s)
		r.Stop = "tool_use"
		if !slices.Contains(r.OutputTypes, "tool_use") {
			r.OutputTypes = []string{"text", "tool_use"}
		}
		delay := msOf(clampF(lognormal(rng, 0.4, 0.4), 0.05, 3) * s.opt.TimeScale)
		if gr.async && k+1 < len(reqs) {
			// the parent goes on right after the launch
			delay = min(delay, msOf(reqs[k+1].ThinkTime)*2/5)
		}
		end, spawn := g.group(gr, k+1, prevEnd+max(1, delay))
		switch {
		case k+1 == len(reqs):
		case gr.async:
			lower = spawn + 1
		default:
			lower = end + max(1, msOf(reqs[k+1].ThinkTime))
		}
	}
	usesSubModel := slices.ContainsFunc(t.Subagents, func(sa Subagent) bool { return sa.Models[0] == s.opt.SubagentModel })
	if usesSubModel && !slices.Contains(t.Models, s.opt.SubagentModel) {
		t.Models = append(t.Models, s.opt.SubagentModel)
	}
}

// plan draws the subagent groups of a trace of turns parent requests,
// sorted by anchor.
func (g *subGen) plan(turns int) []synthGroup {
	rng := g.rng
	if rng.Float64() >= synthPTraceWithSubagents {
		return nil
	}
	share := g.opt.SubagentShare
	// subagent requests wanted in this trace: the share over the traces
	// that have subagents, varied per trace (mean-1 log-normal factor)
	target := share / (1 - share) * float64(turns) / synthPTraceWithSubagents * math.Exp(0.5*rng.NormFloat64()-0.125)
	anchorless := rng.Float64() < synthPAnchorless
	trailing := rng.Float64() < synthPTrailing || (turns == 1 && !anchorless)
	var groups []synthGroup
	planned := 0
	for {
		gr := g.drawGroup()
		n := 0
		for _, c := range gr.children {
			n += c.main
			for _, w := range c.workers {
				n += w
			}
		}
		if len(groups) > 0 && float64(planned)+float64(n)/2 > target {
			break
		}
		groups = append(groups, gr)
		planned += n
	}
	// anchors: optionally before the first request and after the last,
	// the rest distinct join positions between two parent requests
	var at []int
	if anchorless {
		at = append(at, -1)
	}
	if trailing {
		at = append(at, turns-1)
	}
	slots := rng.Perm(turns - 1)
	at = append(at, slots[:max(0, min(len(slots), len(groups)-len(at)))]...)
	groups = groups[:min(len(groups), len(at))]
	for i := range groups {
		groups[i].at = at[i]
		if at[i] < 0 || at[i] == turns-1 {
			groups[i].async = false
		}
		if at[i] < 0 {
			groups[i].children = groups[i].children[:1]
		}
	}
	slices.SortFunc(groups, func(a, b synthGroup) int { return a.at - b.at })
	return groups
}

func (g *subGen) drawGroup() synthGroup {
	rng := g.rng
	var gr synthGroup
	n := 1
	switch u := rng.Float64(); {
	case u < 0.02:
		n = 4
	case u < 0.07:
		n = 3
	case u < 0.2:
		n = 2
	}
	if n == 1 && rng.Float64() < synthPAsync/0.8 {
		gr.async = true
	}
	for range n {
		var c synthChild
		u := rng.Float64()
		for c.kind < len(synthAgentKinds)-1 && u >= synthAgentKinds[c.kind].p {
			u -= synthAgentKinds[c.kind].p
			c.kind++
		}
		c.main = clampInt(int(math.Round(lognormal(rng, 10, 0.6))), 2, 60)
		if rng.Float64() < synthPFanOut {
			c.main = max(c.main, 3)
			for w := 1 + rng.IntN(4); w > 0; w-- {
				c.workers = append(c.workers, clampInt(int(math.Round(lognormal(rng, 5, 0.6))), 1, 30))
			}
		}
		gr.children = append(gr.children, c)
	}
	return gr
}

// group generates gr's children after parent request after-1, the first
// spawned at spawn (ms). It returns the end of the last child (its entry's
// t + duration, or its last request's end when launched in the
// background) and the spawn time of the last child.
func (g *subGen) group(gr *synthGroup, after int, spawn int64) (end, last int64) {
	for j, c := range gr.children {
		if j > 0 {
			spawn += g.dur(0.005 + 0.145*g.rng.Float64())
		}
		sub, e := g.child(c, spawn, gr.async)
		sub.After = after
		g.t.Subagents = append(g.t.Subagents, sub)
		end = max(end, e)
	}
	return end, spawn
}

// base returns the shared prefix of subagent type kind in this trace,
// drawing it on first use.
func (g *subGen) base(kind int) *synthBase {
	if b := g.bases[kind]; b != nil {
		return b
	}
	rng, k := g.rng, &synthAgentKinds[kind]
	b := &synthBase{}
	shared := 0
	if k.parentTools {
		b.tool = clampInt(int(float64(g.t.ToolTokens)*(0.85+0.12*rng.Float64())), 1000, 20000)
		shared = int(float64(min(b.tool, g.t.ToolTokens)/64) * (0.5 + 0.45*rng.Float64()))
	} else {
		b.tool = clampInt(int(lognormal(rng, k.tool, 0.03)), 4000, 12000)
	}
	b.system = clampInt(int(lognormal(rng, k.system, 0.25)), 300, 3000)
	capPrefix(&b.tool, &b.system, g.opt.MaxContext)
	b.tokens = b.tool + b.system + clampInt(int(lognormal(rng, 1800, 0.9)), 200, 20000)
	if mc := g.opt.MaxContext; mc > 0 {
		b.tokens = max(b.tool+b.system, min(b.tokens, mc/4))
	}
	shared = min(shared, b.tool/64, len(g.t.Requests[0].HashIDs))
	b.ids = make([]uint32, 0, b.tokens/64)
	b.ids = append(b.ids, g.t.Requests[0].HashIDs[:shared]...)
	for len(b.ids) < b.tokens/64 {
		b.ids = append(b.ids, g.s.nextID)
		g.s.nextID++
	}
	g.bases[kind] = b
	return b
}

// child generates one subagent entry spawned at spawn (ms) and returns it
// with its end.
func (g *subGen) child(c synthChild, spawn int64, async bool) (Subagent, int64) {
	rng, k := g.rng, &synthAgentKinds[c.kind]
	b := g.base(c.kind)
	g.agent++
	sub := Subagent{
		T:            secOf(spawn),
		AgentID:      fmt.Sprintf("agent_%03d", g.agent),
		SubagentType: k.name,
		Status:       "completed",
		Models:       []string{g.opt.SubagentModel},
		ToolTokens:   b.tool,
		SystemTokens: b.system,
		DurationMs:   math.NaN(),
	}
	tps := 120.0
	if k.parentModel {
		sub.Models[0], tps = g.opt.Model, 65
	}
	model := sub.Models[0]
	main := &synthChain{}
	g.step(main, b, spawn, false, false, model, tps)
	chains := []*synthChain{main}
	for i := 1; i < c.main-1; i++ {
		g.step(main, b, 0, false, false, model, tps)
		if i != 1 || len(c.workers) == 0 {
			continue
		}
		// workers start while the main chain's second request runs
		r1 := main.reqs[1]
		at := msOf(r1.T) + max(1, int64((0.05+0.45*rng.Float64())*float64(msOf(r1.APITime))))
		for _, n := range c.workers {
			w := &synthChain{}
			g.step(w, b, at, true, n == 1, model, tps)
			for m := 1; m < n; m++ {
				g.step(w, b, 0, true, m == n-1, model, tps)
			}
			chains = append(chains, w)
			at += g.dur(0.01 + 0.2*rng.Float64())
		}
	}
	// the final answer comes after every worker finished
	var after int64
	for _, ch := range chains[1:] {
		after = max(after, ch.end+g.dur(g.think()))
	}
	g.step(main, b, after, false, true, model, tps)
	var end int64
	toolUses := 0
	for _, ch := range chains {
		sub.Requests = append(sub.Requests, ch.reqs...)
		end = max(end, ch.end)
		toolUses += len(ch.reqs) - 1
	}
	slices.SortFunc(sub.Requests, func(a, b Request) int { return cmp.Compare(a.T, b.T) })
	if async {
		sub.Status = "async_launched"
		return sub, end
	}
	// parallel tool calls within a request
	for range toolUses {
		if rng.Float64() < 0.6 {
			toolUses++
		}
	}
	sub.ToolUseCount = toolUses
	last := main.reqs[len(main.reqs)-1]
	sub.TotalTokens = last.In + last.Out
	end += g.dur(0.05 + 0.35*rng.Float64())
	sub.DurationMs = float64(end - spawn)
	return sub, end
}

// think draws the client gap between two requests of a subagent, seconds.
func (g *subGen) think() float64 {
	if g.rng.Float64() < 0.93 {
		return clampF(lognormal(g.rng, 3, 0.35), 0.5, 30)
	}
	return clampF(lognormal(g.rng, 20, 0.7), 2, 300)
}

// step appends one request to chain c, starting at or after lower (ms)
// and after the chain's previous request ended plus a think time. The
// first request of a chain is b's prefix plus a task prompt; the final one
// carries the chain's answer (shorter for a worker).
func (g *subGen) step(c *synthChain, b *synthBase, lower int64, worker, final bool, model string, tps float64) {
	rng, opt := g.rng, g.opt
	first := len(c.reqs) == 0
	var start, think int64
	if first {
		start = g.claim(lower)
		// at least two blocks of its own beyond the shared prefix
		c.in = b.tokens + clampInt(int(lognormal(rng, 250, 0.6)), 128, 3000)
		c.in = min(c.in, g.maxIn)
		c.ids = c.store.next(g.s, b.ids, len(b.ids), c.in/64)
	} else {
		think = g.dur(g.think())
		start = g.claim(max(lower, c.end+think))
		think = start - c.end
		c.in += c.out + int(clampF(lognormal(rng, 2000, 1.6), 20, 100000))
		c.in = min(c.in, g.maxIn)
		keep := len(c.ids)
		if rng.Float64() < 0.05 {
			keep-- // a re-tokenised tail
		}
		c.ids = c.store.next(g.s, c.ids, keep, c.in/64)
	}
	var out int
	switch {
	case final && worker:
		out = int(clampF(lognormal(rng, 900, 0.6), 100, 6000))
	case final:
		out = int(clampF(lognormal(rng, 2500, 0.5), 150, 8000))
	default:
		out = int(clampF(lognormal(rng, 190, 0.55), 20, 4000))
	}
	if opt.MaxContext > 0 && c.in+out > opt.MaxContext {
		out = max(1, opt.MaxContext-c.in)
	}
	api := g.dur(0.6 + float64(c.in)/200000 + float64(out)/clampF(lognormal(rng, tps, 0.25), 20, 400))
	r := Request{
		T:           secOf(start),
		Type:        "n",
		Model:       model,
		In:          c.in,
		Out:         out,
		HashIDs:     c.ids,
		InputTypes:  []string{"tool_result"},
		OutputTypes: []string{"text", "tool_use"},
		Stop:        "tool_use",
		APITime:     secOf(api),
		ThinkTime:   secOf(think),
		TTFT:        math.NaN(),
	}
	if first {
		r.InputTypes = []string{"text"}
	}
	if final {
		r.OutputTypes, r.Stop = []string{"text"}, "end_turn"
	}
	c.reqs = append(c.reqs, r)
	c.out = out
	c.end = start + api
}
