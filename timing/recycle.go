package timing

// recycler picks the trace a lane plays after its tree (v0.2, v1.0) or
// its root (v0.3) is done.
type recycler interface {
	// next returns the next plan for global lane lane, whose tree of plan
	// done just ended, and the new tree's recycle pass (-1: the caller
	// counts passes per trace); nil when there is none. k is how many
	// trees the lane recycled before. live reports how many trees play a
	// plan right now (done's already released); initial counts the lanes
	// (of this shard) that started with each plan.
	next(lane, k int, done *Plan, live func(*Plan) int, initial []int) (*Plan, int)
	len() int
	fallbacks() int
}

// newRecycler returns the recycle source of the generation. pool is the
// usable plans in corpus order; given marks those the lanes started with.
func (s *Schedule) newRecycler(pool []*Plan, given []bool) recycler {
	switch s.cfg.Generation.Recycle {
	case RecycleUnused:
		// A shard's queue starts with its share of the traces no global
		// lane took, dealt by queue position.
		q := &fifo{scan: s.cfg.RecycleScan}
		j := 0
		for _, p := range pool {
			if !given[p.Trace] {
				if s.cfg.Shard.Owns(j) {
					q.q = append(q.q, p)
				}
				j++
			}
		}
		return q
	case RecyclePrefilled:
		return &fifo{prefilled: true, q: append([]*Plan(nil), pool...)}
	}
	return &sampler{pool: pool, lanes: s.cfg.Lanes}
}

// fifo is the legacy recycle queue; the ended trace always goes to its
// tail first.
//
// v0.2: the queue starts with the usable traces no lane took; the lane
// takes the first of at most scan entries from the head that is not live
// on another lane, else the head.
//
// v0.3 (prefilled): the queue starts with every usable trace; the lane
// pops entries from the head, and an entry whose live count has reached
// its cap (the number of lanes that started with it, at least 1) goes back
// to the tail; after one pass over the queue without an eligible entry the
// lane gets nothing.
type fifo struct {
	q         []*Plan
	scan      int
	prefilled bool
	fallback  int
}

func (f *fifo) len() int       { return len(f.q) }
func (f *fifo) fallbacks() int { return f.fallback }

func (f *fifo) next(_, _ int, done *Plan, live func(*Plan) int, initial []int) (*Plan, int) {
	f.q = append(f.q, done)
	if f.prefilled {
		for range len(f.q) {
			p := f.q[0]
			f.q = append(f.q[1:], p)
			if live(p) < max(initial[p.Trace], 1) {
				f.q = f.q[:len(f.q)-1]
				return p, -1
			}
		}
		return nil, -1
	}
	pick := 0
	n := min(len(f.q), f.scan)
	for pick < n && live(f.q[pick]) > 0 {
		pick++
	}
	if pick == n {
		pick = 0
		f.fallback++
	}
	p := f.q[pick]
	f.q = append(f.q[:pick], f.q[pick+1:]...)
	return p, -1
}

// sampler is the v1.0 recycle source: the sequence of the usable roots
// in corpus order, wrapping, whose first Lanes positions are the lanes'
// initial trees. Each lane walks it on its own: global lane i's k-th
// recycle (k from 0) takes position Lanes + i + k, so what a lane plays
// depends only on its global index, never on the order in which lanes
// recycle (nor on the shard that plays it). The first round hands out
// the positions a shared round-robin would (Lanes … 2·Lanes−1, one per
// lane); after it each lane steps one position per recycle, so the lanes
// in one round still play distinct roots when Lanes ≤ len(pool), and
// every lane goes through the whole pool. The pass of the tree at
// position q is q / len(pool): how many earlier positions hold the same
// root.
type sampler struct {
	pool  []*Plan
	lanes int
}

func (s *sampler) len() int       { return len(s.pool) }
func (s *sampler) fallbacks() int { return 0 }

func (s *sampler) next(lane, k int, _ *Plan, _ func(*Plan) int, _ []int) (*Plan, int) {
	q := s.lanes + lane + k
	return s.pool[q%len(s.pool)], q / len(s.pool)
}
