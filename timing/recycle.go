package timing

// recycler picks the trace a lane plays after its tree (v0.2, v1.0) or
// its root (v0.3) is done.
type recycler interface {
	// next returns the next plan for a lane whose tree of plan done just
	// ended, nil when there is none. live reports how many trees play a
	// plan right now (done's already released); initial counts the lanes
	// that started with each plan.
	next(done *Plan, live func(*Plan) int, initial []int) *Plan
	len() int
	fallbacks() int
}

// newRecycler returns the recycle source of the generation. pool is the
// usable plans in corpus order; given marks those the lanes started with.
func (s *Schedule) newRecycler(pool []*Plan, given []bool) recycler {
	switch s.cfg.Generation.Recycle {
	case RecycleUnused:
		q := &fifo{scan: s.cfg.RecycleScan}
		for _, p := range pool {
			if !given[p.Trace] {
				q.q = append(q.q, p)
			}
		}
		return q
	case RecyclePrefilled:
		return &fifo{prefilled: true, q: append([]*Plan(nil), pool...)}
	}
	return &sampler{pool: pool, next0: s.cfg.Lanes % len(pool)}
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

func (f *fifo) next(done *Plan, live func(*Plan) int, initial []int) *Plan {
	f.q = append(f.q, done)
	if f.prefilled {
		for range len(f.q) {
			p := f.q[0]
			f.q = append(f.q[1:], p)
			if live(p) < max(initial[p.Trace], 1) {
				f.q = f.q[:len(f.q)-1]
				return p
			}
		}
		return nil
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
	return p
}

// sampler is the v1.0 recycle source: sequential round-robin over the
// usable roots, continuing after the ones the lanes started with, and
// wrapping.
type sampler struct {
	pool  []*Plan
	next0 int
}

func (s *sampler) len() int       { return len(s.pool) }
func (s *sampler) fallbacks() int { return 0 }

func (s *sampler) next(*Plan, func(*Plan) int, []int) *Plan {
	p := s.pool[s.next0]
	s.next0 = (s.next0 + 1) % len(s.pool)
	return p
}
