package dataset

import (
	"container/heap"
	"fmt"
	"math"
	"sort"
)

// ChainOptions are the switches of the v1.0 session layout (LayoutChains),
// named after the AIPERF_DATASET_WEKA_* variables of the pinned aiperf
// loader that set them. Every value is taken literally (0 disables the
// rule it bounds, as it does in aiperf): start from DefaultChainOptions.
type ChainOptions struct {
	// Split runs the chain detection (WEKA_SPLIT_FLATTENED_AGENTS). False
	// keeps every request on the main chain, in time order.
	Split bool
	// SeamMaxGap (seconds, WEKA_SEAM_MAX_GAP_SECONDS) and SeamMinOverlap
	// (WEKA_SEAM_MIN_OVERLAP_RATIO) guard the seams: a continuation that
	// starts more than SeamMaxGap after the chain's tail ended AND keeps
	// less than SeamMinOverlap of the tail's blocks is not spliced on.
	SeamMaxGap     float64
	SeamMinOverlap float64
	// AuxMaxRequests (WEKA_AUX_MAX_REQUESTS; 0 = no aux labels) is the
	// longest chain that may be an auxiliary one-shot; AuxISLRatio
	// (WEKA_AUX_ISL_RATIO) and AuxISLFloor (WEKA_AUX_ISL_FLOOR) its size
	// test; AuxCrossModel (WEKA_AUX_CROSS_MODEL) its model-switch test.
	AuxMaxRequests int
	AuxISLRatio    float64
	AuxISLFloor    int
	AuxCrossModel  bool
	// ReductionOSLMax (WEKA_AUX_REDUCTION_OSL_MAX; 0 = off) and
	// ReductionRatio (WEKA_AUX_REDUCTION_RATIO) classify a reduction
	// one-shot (aux:red).
	ReductionOSLMax int
	ReductionRatio  float64
	// WorkerGroupMin (WEKA_WORKER_GROUP_MIN; 0 = off) is the smallest
	// parallel worker group (wg).
	WorkerGroupMin int
}

// DefaultChainOptions returns the pinned loader's defaults.
func DefaultChainOptions() ChainOptions {
	return ChainOptions{
		Split:           true,
		SeamMaxGap:      3600,
		SeamMinOverlap:  0.5,
		AuxMaxRequests:  1,
		AuxISLRatio:     0.10,
		AuxISLFloor:     16384,
		AuxCrossModel:   true,
		ReductionOSLMax: 4000,
		ReductionRatio:  20,
		WorkerGroupMin:  3,
	}
}

// Validate reports a value outside the range the loader accepts.
func (o ChainOptions) Validate() error {
	bad := func(name string, v any, want string) error {
		return fmt.Errorf("chain layout: %s %v: %s", name, v, want)
	}
	switch {
	case !(o.SeamMaxGap >= 0):
		return bad("seam max gap", o.SeamMaxGap, "must be ≥ 0 seconds")
	case !(o.SeamMinOverlap >= 0 && o.SeamMinOverlap <= 1):
		return bad("seam min overlap ratio", o.SeamMinOverlap, "must be in [0, 1]")
	case o.AuxMaxRequests < 0:
		return bad("aux max requests", o.AuxMaxRequests, "must be ≥ 0")
	case !(o.AuxISLRatio >= 0) || math.IsInf(o.AuxISLRatio, 0):
		return bad("aux ISL ratio", o.AuxISLRatio, "must be finite and ≥ 0")
	case o.AuxISLFloor < 0:
		return bad("aux ISL floor", o.AuxISLFloor, "must be ≥ 0")
	case o.ReductionOSLMax < 0:
		return bad("reduction OSL max", o.ReductionOSLMax, "must be ≥ 0")
	case !(o.ReductionRatio >= 0) || math.IsInf(o.ReductionRatio, 0):
		return bad("reduction ratio", o.ReductionRatio, "must be finite and ≥ 0")
	case o.WorkerGroupMin < 0:
		return bad("worker group min", o.WorkerGroupMin, "must be ≥ 0")
	}
	return nil
}

// ChainKind is how a worker chain is labelled.
type ChainKind uint8

// The worker chain kinds, in the loader's precedence order.
const (
	// ChainAgent is a solo agent ("fa:NNN").
	ChainAgent ChainKind = iota
	// ChainAux is an auxiliary one-shot: short and small or cross-model
	// ("aux:NNN").
	ChainAux
	// ChainReduction is a large-input, short-output one-shot on the main
	// model ("aux:red:NNN").
	ChainReduction
	// ChainWorkerGroup is a member of a parallel fan-out ("wg:GGG_MMM").
	ChainWorkerGroup
)

// String returns the label family: fa, aux, aux:red or wg.
func (k ChainKind) String() string {
	switch k {
	case ChainAux:
		return "aux"
	case ChainReduction:
		return "aux:red"
	case ChainWorkerGroup:
		return "wg"
	}
	return "fa"
}

// ChainLayout is how LayoutChains splits one list of requests.
type ChainLayout struct {
	// Main holds the indices of the main chain's requests in replay order,
	// the preamble (if any) put back in time order. With no worker chain
	// it is every request in time order (the caller may keep its own
	// order then, as the loader does at the top level).
	Main []int
	// Workers are the other chains, ordered by their first request (t,
	// index).
	Workers []WorkerChain
	// Preamble is the index of the request set aside before detection
	// (it rides the main chain for replay), -1 for none.
	Preamble int
	// Seams counts the continuations spliced back onto their chain.
	Seams int
	// EmptyHash counts the requests without hash ids (kept on the main
	// chain).
	EmptyHash int
	// MainFirstHash is the hash list of the main chain's first
	// hash-bearing request (preamble excluded): the base ChainPrefixTokens
	// compares a worker's first request against.
	MainFirstHash []uint32
}

// WorkerChain is one detected chain other than the main one.
type WorkerChain struct {
	// Label is "fa:NNN", "aux:NNN", "aux:red:NNN" (NNN the chain's index
	// among the workers) or "wg:GGG_MMM" (group and member).
	Label string
	Kind  ChainKind
	// Reqs are the indices of its requests in replay order.
	Reqs []int
	// ForkParent is the chain it forked from (-1: none or the main chain
	// before any worker exists; 0 is the main chain, k > 0 the k-th
	// detected chain in detection order) and ForkDepth the blocks it
	// shared with that chain's tail.
	ForkParent, ForkDepth int
}

// ChainPrefixTokens returns the tool and system token counts of a worker
// chain's first turn: the declared counts when its first hash list starts
// with the same declared-prefix blocks as the main chain's (base), else
// 0 and 0 (the system prompt is never made up for a chain that did not
// record it).
func ChainPrefixTokens(toolTokens, systemTokens, blockSize int, base, chain []uint32) (int, int) {
	if blockSize <= 0 {
		blockSize = 64
	}
	n := (toolTokens + systemTokens + blockSize - 1) / blockSize
	if n <= 0 || len(chain) < n || len(base) < n {
		return 0, 0
	}
	for i := 0; i < n; i++ {
		if chain[i] != base[i] {
			return 0, 0
		}
	}
	return toolTokens, systemTokens
}

// chainEpsilon is the loader's tolerance (seconds) in time comparisons.
const chainEpsilon = 1e-6

// titleGenMaxOut is the largest output of a small preamble request.
const titleGenMaxOut = 64

// chainEnd is when r ended: its start plus a finite, non-negative
// api_time (0 otherwise).
func chainEnd(r *Request) float64 {
	d := r.APITime
	if math.IsNaN(d) || math.IsInf(d, 0) || d < 0 {
		d = 0
	}
	return r.T + d
}

func hashLCP(a, b []uint32) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

type chainFork struct {
	parent    int // -1: none
	forkOuter int // -1: none
	depth     int
	forkTime  float64
}

type detChain struct {
	reqs      []int
	fork      *chainFork
	spliced   int // -1: live
	tailIdx   int
	tailHash  []uint32
	tailEnd   float64
	tailModel string
}

// LayoutChains splits reqs (one level of a trace: its top-level requests,
// or one subagent entry's inner requests) into chains by their hash-id
// prefixes, as the pinned aiperf loader does (docs/replay.md, "v1.0
// session layout"). A request's index in reqs is its position for every
// tie-break. It is a pure function of reqs and o.
func LayoutChains(reqs []Request, o ChainOptions) ChainLayout {
	out := ChainLayout{Preamble: -1}
	all := make([]int, len(reqs))
	for i := range all {
		all[i] = i
	}
	timeOrder := func(idx []int) []int {
		s := append([]int(nil), idx...)
		sort.SliceStable(s, func(a, b int) bool { return reqs[s[a]].T < reqs[s[b]].T })
		return s
	}
	for i := range reqs {
		if len(reqs[i].HashIDs) == 0 {
			out.EmptyHash++
		}
	}
	if !o.Split || len(reqs) < 2 {
		out.Main = timeOrder(all)
		out.EmptyHash = 0
		return out
	}
	pre, rest := splitPreamble(reqs, all, timeOrder)
	out.Preamble = pre
	d := detectChains(reqs, rest, timeOrder(rest), o)
	out.Seams = d.seams
	main := d.chains[d.main].reqs
	for _, i := range main {
		if len(reqs[i].HashIDs) > 0 {
			out.MainFirstHash = reqs[i].HashIDs
			break
		}
	}
	out.Main = append([]int(nil), main...)
	if pre >= 0 {
		out.Main = append(out.Main, pre)
		sort.SliceStable(out.Main, func(a, b int) bool {
			x, y := out.Main[a], out.Main[b]
			if reqs[x].T != reqs[y].T {
				return reqs[x].T < reqs[y].T
			}
			return x < y
		})
	}
	mainPeak := 0
	for _, i := range main {
		mainPeak = max(mainPeak, reqs[i].In)
	}
	mainModel, hasMain := "", len(main) > 0
	if hasMain {
		mainModel = reqs[main[0]].Model
	}
	groups := workerGroups(reqs, d, o.WorkerGroupMin)
	for n, ci := range d.workers {
		c := &d.chains[ci]
		w := WorkerChain{Reqs: append([]int(nil), c.reqs...), ForkParent: -1}
		if c.fork != nil {
			w.ForkParent, w.ForkDepth = c.fork.parent, c.fork.depth
		}
		aux := isAux(reqs, c.reqs, mainPeak, mainModel, hasMain, o)
		red := !aux && isReduction(reqs, c.reqs, o)
		g, inGroup := groups[ci]
		switch {
		case aux:
			w.Kind, w.Label = ChainAux, fmt.Sprintf("aux:%03d", n)
		case red:
			w.Kind, w.Label = ChainReduction, fmt.Sprintf("aux:red:%03d", n)
		case inGroup:
			w.Kind, w.Label = ChainWorkerGroup, fmt.Sprintf("wg:%03d_%03d", g[0], g[1])
		default:
			w.Kind, w.Label = ChainAgent, fmt.Sprintf("fa:%03d", n)
		}
		out.Workers = append(out.Workers, w)
	}
	return out
}

// splitPreamble sets aside the earliest request when it shares no prefix
// with any other request and is either small (out ≤ 64) or shares no
// block at all with the others. It returns its index (-1: none) and the
// remaining indices in their original order.
func splitPreamble(reqs []Request, idx []int, timeOrder func([]int) []int) (int, []int) {
	if len(idx) < 2 {
		return -1, idx
	}
	first := timeOrder(idx)[0]
	r := &reqs[first]
	if len(r.HashIDs) == 0 {
		return -1, idx
	}
	rest := make([]int, 0, len(idx)-1)
	for _, i := range idx {
		if i != first {
			rest = append(rest, i)
		}
	}
	for _, i := range rest {
		if h := reqs[i].HashIDs; len(h) > 0 && hashLCP(r.HashIDs, h) > 0 {
			return -1, idx
		}
	}
	if r.Out > titleGenMaxOut {
		mine := make(map[uint32]struct{}, len(r.HashIDs))
		for _, h := range r.HashIDs {
			mine[h] = struct{}{}
		}
		for _, i := range rest {
			for _, h := range reqs[i].HashIDs {
				if _, ok := mine[h]; ok {
					return -1, idx
				}
			}
		}
	}
	return first, rest
}

type detection struct {
	chains  []detChain
	main    int
	workers []int
	seams   int
}

// detectChains is the loader's two-phase detection over the requests in
// ordered ((t, index) order).
func detectChains(reqs []Request, idx, ordered []int, o ChainOptions) detection {
	var d detection
	if len(idx) == 0 {
		d.chains = []detChain{{spliced: -1, tailIdx: -1}}
		return d
	}
	chainOf := map[int]int{}
	forksByTail := map[int][]int{}
	appendTo := func(ci, i int) {
		c := &d.chains[ci]
		c.reqs = append(c.reqs, i)
		chainOf[i] = ci
		if r := &reqs[i]; len(r.HashIDs) > 0 {
			c.tailIdx, c.tailHash, c.tailEnd, c.tailModel = i, r.HashIDs, chainEnd(r), r.Model
		}
	}
	newChain := func(f *chainFork) int {
		d.chains = append(d.chains, detChain{fork: f, spliced: -1, tailIdx: -1})
		return len(d.chains) - 1
	}
	// Phase 1: greedy extension or fork, in (t, index) order.
	for _, i := range ordered {
		r := &reqs[i]
		if len(r.HashIDs) == 0 {
			if len(d.chains) == 0 {
				newChain(nil)
			}
			d.chains[0].reqs = append(d.chains[0].reqs, i)
			chainOf[i] = 0
			continue
		}
		if len(d.chains) == 0 {
			appendTo(newChain(nil), i)
			continue
		}
		if t := extensionTarget(d.chains, r); t >= 0 {
			appendTo(t, i)
			continue
		}
		parent, depth := maxLCPChain(d.chains, r.HashIDs)
		if parent < 0 {
			evidence := false
			for k := range d.chains {
				if len(d.chains[k].tailHash) > 0 {
					evidence = true
					break
				}
			}
			if !evidence {
				appendTo(0, i)
				continue
			}
		}
		f := &chainFork{parent: parent, forkOuter: -1, depth: depth, forkTime: r.T}
		if parent >= 0 {
			f.forkOuter = d.chains[parent].tailIdx
		}
		ci := newChain(f)
		appendTo(ci, i)
		if f.forkOuter >= 0 && depth > 0 {
			forksByTail[f.forkOuter] = append(forksByTail[f.forkOuter], ci)
		}
	}
	d.seams = resolveSeams(reqs, d.chains, forksByTail, chainOf, o)
	resolve := func(i int) int {
		for d.chains[i].spliced >= 0 {
			i = d.chains[i].spliced
		}
		return i
	}
	for k := range d.chains {
		c := &d.chains[k]
		if c.spliced < 0 && c.fork != nil && c.fork.parent >= 0 {
			c.fork.parent = resolve(c.fork.parent)
		}
	}
	d.main = resolve(chainOf[ordered[0]])
	for k := range d.chains {
		if d.chains[k].spliced < 0 && k != d.main {
			d.workers = append(d.workers, k)
		}
	}
	sort.SliceStable(d.workers, func(a, b int) bool {
		x, y := d.chains[d.workers[a]].reqs[0], d.chains[d.workers[b]].reqs[0]
		if reqs[x].T != reqs[y].T {
			return reqs[x].T < reqs[y].T
		}
		return x < y
	})
	return d
}

// extensionTarget is the chain whose tail is a complete prefix of r's
// hash ids, ended by r's start and ran on r's model; the deepest tail
// wins, ties the lowest chain. -1 for none.
func extensionTarget(chains []detChain, r *Request) int {
	best, bestLen := -1, -1
	h := r.HashIDs
	for k := range chains {
		c := &chains[k]
		tl := len(c.tailHash)
		if tl == 0 || tl > len(h) || tl <= bestLen || c.tailModel != r.Model || c.tailEnd > r.T+chainEpsilon {
			continue
		}
		if hashLCP(c.tailHash, h[:tl]) == tl {
			best, bestLen = k, tl
		}
	}
	return best
}

// maxLCPChain is the chain whose tail shares the longest prefix with h
// (ties: the longer tail, then the lowest chain); -1 and 0 for none.
func maxLCPChain(chains []detChain, h []uint32) (int, int) {
	best, bd, bl := -1, 0, 0
	for k := range chains {
		c := &chains[k]
		if len(c.tailHash) == 0 {
			continue
		}
		d := hashLCP(c.tailHash, h)
		if d == 0 {
			continue
		}
		if d > bd || d == bd && len(c.tailHash) > bl {
			best, bd, bl = k, d, len(c.tailHash)
		}
	}
	return best, bd
}

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func lastHashIdx(reqs []Request, c *detChain) int {
	for k := len(c.reqs) - 1; k >= 0; k-- {
		if len(reqs[c.reqs[k]].HashIDs) > 0 {
			return c.reqs[k]
		}
	}
	return -1
}

// resolveSeams is phase 2: for each fork-source request in index order
// that is still its chain's last hash-bearing request, the deepest
// eligible fork (same model, starting after the tail ended, not refused
// by the gap guard) is spliced back on; the other forks are re-keyed to
// the new tail. It returns the number of seams.
func resolveSeams(reqs []Request, chains []detChain, forksByTail map[int][]int, chainOf map[int]int, o ChainOptions) int {
	resolve := func(i int) int {
		for chains[i].spliced >= 0 {
			i = chains[i].spliced
		}
		return i
	}
	keys := make(intHeap, 0, len(forksByTail))
	for k := range forksByTail {
		keys = append(keys, k)
	}
	heap.Init(&keys)
	processed := map[int]bool{}
	seams := 0
	for keys.Len() > 0 {
		fo := heap.Pop(&keys).(int)
		if processed[fo] {
			continue
		}
		processed[fo] = true
		owner := resolve(chainOf[fo])
		oc := &chains[owner]
		if lastHashIdx(reqs, oc) != fo {
			continue
		}
		var registered []int
		for _, ci := range forksByTail[fo] {
			if chains[ci].spliced < 0 {
				registered = append(registered, ci)
			}
		}
		elected := electContinuation(reqs, chains, registered, &reqs[fo], o)
		if elected < 0 {
			continue
		}
		target := &chains[elected]
		oc.reqs = append(oc.reqs, target.reqs...)
		for _, i := range target.reqs {
			chainOf[i] = owner
		}
		target.spliced = owner
		seams++
		newTail := lastHashIdx(reqs, oc)
		if newTail < 0 {
			continue
		}
		rekeyed := false
		for _, ci := range registered {
			c := &chains[ci]
			if ci == elected || c.spliced >= 0 || c.fork == nil {
				continue
			}
			dd := hashLCP(reqs[newTail].HashIDs, reqs[c.reqs[0]].HashIDs)
			if dd <= 0 {
				continue
			}
			c.fork.forkOuter, c.fork.depth, c.fork.parent = newTail, dd, owner
			forksByTail[newTail] = append(forksByTail[newTail], ci)
			rekeyed = true
		}
		if rekeyed {
			delete(processed, newTail)
			heap.Push(&keys, newTail)
		}
	}
	return seams
}

// electContinuation picks the seam continuation of tail request t among
// the registered forks: positive depth, starting at or after t's end, on
// t's model, not refused by the gap guard; the deepest wins, then the
// earliest, then the lowest chain. -1 for none.
func electContinuation(reqs []Request, chains []detChain, registered []int, t *Request, o ChainOptions) int {
	tEnd := chainEnd(t)
	tail := len(t.HashIDs)
	best := -1
	for _, ci := range registered {
		c := &chains[ci]
		if c.fork == nil || c.fork.depth <= 0 {
			continue
		}
		first := &reqs[c.reqs[0]]
		if !(tEnd <= first.T+chainEpsilon) || first.Model != t.Model {
			continue
		}
		if tail > 0 {
			gap := first.T - tEnd
			overlap := float64(c.fork.depth) / float64(tail)
			if gap > o.SeamMaxGap && overlap < o.SeamMinOverlap {
				continue
			}
		}
		if best < 0 {
			best = ci
			continue
		}
		b := chains[best].fork
		switch {
		case c.fork.depth != b.depth:
			if c.fork.depth > b.depth {
				best = ci
			}
		case c.fork.forkTime != b.forkTime:
			if c.fork.forkTime < b.forkTime {
				best = ci
			}
		case ci < best:
			best = ci
		}
	}
	return best
}

// isAux is the loader's auxiliary one-shot test.
func isAux(reqs []Request, chain []int, mainPeak int, mainModel string, hasMain bool, o ChainOptions) bool {
	if len(chain) == 0 || len(chain) > o.AuxMaxRequests {
		return false
	}
	first := &reqs[chain[0]]
	if o.AuxCrossModel && hasMain && first.Model != mainModel {
		return true
	}
	threshold := max(o.AuxISLFloor, int(o.AuxISLRatio*float64(mainPeak)))
	return first.In < threshold
}

// isReduction is the loader's reduction one-shot test.
func isReduction(reqs []Request, chain []int, o ChainOptions) bool {
	if o.ReductionOSLMax <= 0 || len(chain) != 1 {
		return false
	}
	first := &reqs[chain[0]]
	if first.Out <= 0 || first.Out >= o.ReductionOSLMax || first.In < o.AuxISLFloor {
		return false
	}
	return float64(first.In) > o.ReductionRatio*float64(first.Out)
}

// workerGroups assigns (group, member) to the workers of parallel
// fan-outs: workers forked (depth > 0) from the same tail request, split
// into components of overlapping [first start, latest end) intervals; a
// component of at least min members is a group. Groups are numbered by
// their earliest start, members by (start, index).
func workerGroups(reqs []Request, d detection, minMembers int) map[int][2]int {
	if minMembers <= 0 {
		return nil
	}
	type cand struct {
		t0, t1 float64
		first  int
		ci     int
	}
	type key struct{ parent, outer int }
	var order []key
	buckets := map[key][]cand{}
	for _, ci := range d.workers {
		c := &d.chains[ci]
		f := c.fork
		if f == nil || f.depth <= 0 || f.parent < 0 || f.forkOuter < 0 || len(c.reqs) == 0 {
			continue
		}
		t1 := math.Inf(-1)
		for _, i := range c.reqs {
			t1 = max(t1, chainEnd(&reqs[i]))
		}
		k := key{f.parent, f.forkOuter}
		if _, ok := buckets[k]; !ok {
			order = append(order, k)
		}
		buckets[k] = append(buckets[k], cand{reqs[c.reqs[0]].T, t1, c.reqs[0], ci})
	}
	less := func(a, b cand) bool {
		if a.t0 != b.t0 {
			return a.t0 < b.t0
		}
		return a.first < b.first
	}
	var groups [][]cand
	for _, k := range order {
		cs := buckets[k]
		sorted := append([]cand(nil), cs...)
		sort.SliceStable(sorted, func(a, b int) bool { return less(sorted[a], sorted[b]) })
		// Sweep in start order: everything still active (end > this
		// start) is one component; touching intervals do not overlap.
		var comp []cand
		activeEnd := math.Inf(-1)
		flush := func() {
			if len(comp) >= minMembers {
				groups = append(groups, comp)
			}
			comp = nil
		}
		for _, c := range sorted {
			if len(comp) > 0 && !(activeEnd > c.t0) {
				flush()
				activeEnd = math.Inf(-1)
			}
			comp = append(comp, c)
			activeEnd = max(activeEnd, c.t1)
		}
		flush()
	}
	sort.SliceStable(groups, func(a, b int) bool { return less(groups[a][0], groups[b][0]) })
	out := map[int][2]int{}
	for g, comp := range groups {
		for m, c := range comp {
			out[c.ci] = [2]int{g, m}
		}
	}
	return out
}
