package servermetrics

import "math"

// bucketRing is how many recent scrapes of a histogram bucket are kept.
const bucketRing = 16

// bucketAcc keeps one histogram bucket in constant memory. Buckets are the
// bulk of a vLLM page (a dozen histograms of 20–30 buckets per engine) but
// are only needed at window endpoints (the timeslices carry count and sum,
// which keep full tracks). So instead of one float per scrape a bucket
// keeps its reset-adjusted running increase (acc), the acc of the last
// bucketRing scrapes, and the acc at pinned scrape indices: its first
// sample and the samples that bound the profiling window (pinned when the
// window is marked). acc(end) − acc(ref) is then the same increase as
// increase() computes from a full track.
type bucketAcc struct {
	birth  int // scrape index of the first sample
	late   bool
	acc    float64
	last   float64
	lastK  int
	ring   [bucketRing]float64
	ringK  [bucketRing]int
	pinned map[int]float64
}

func newBucketAcc(birth int, late bool) *bucketAcc {
	b := &bucketAcc{birth: birth, late: late, lastK: -1}
	for i := range b.ringK {
		b.ringK[i] = -1
	}
	return b
}

// observe records the cumulative count v at scrape index k (k ≥ birth,
// increasing from call to call); reset is true when the histogram's count
// dropped at k. A bucket may be born at any scrape (a histogram or one of
// its bounds that first appears mid-run) and may be missing from any
// number of scrapes; a drop of the bucket's own value is a reset too.
func (b *bucketAcc) observe(k int, v float64, reset bool) {
	if math.IsNaN(v) || k < b.birth || k <= b.lastK {
		return
	}
	prev := b.acc
	switch {
	case b.lastK < 0:
		if b.late {
			b.acc = v // created during the collection: started at zero
		}
	case reset || v < b.last:
		b.acc += v
	default:
		b.acc += v - b.last
	}
	// Scrapes between the last sample and this one carry the old value;
	// before the first sample there is nothing to carry (accAt answers 0
	// before birth).
	if b.lastK >= 0 {
		for j := max(b.lastK+1, k-bucketRing+1); j < k; j++ {
			b.ring[j%bucketRing], b.ringK[j%bucketRing] = prev, j
		}
	}
	b.ring[k%bucketRing], b.ringK[k%bucketRing] = b.acc, k
	b.last, b.lastK = v, k
	if k == b.birth {
		b.pin(k)
	}
}

// accAt returns acc as of scrape index k (the last sample at or before
// k); ok is false when that value was neither pinned nor recent.
func (b *bucketAcc) accAt(k int) (float64, bool) {
	switch {
	case k < b.birth || b.lastK < 0:
		return 0, true
	case k >= b.lastK:
		return b.acc, true
	}
	if v, ok := b.pinned[k]; ok {
		return v, true
	}
	if b.ringK[k%bucketRing] == k {
		return b.ring[k%bucketRing], true
	}
	return math.NaN(), false
}

// pin keeps acc as of scrape index k for later windows.
func (b *bucketAcc) pin(k int) {
	if k < b.birth {
		return
	}
	if v, ok := b.accAt(k); ok {
		if b.pinned == nil {
			b.pinned = map[int]float64{}
		}
		b.pinned[k] = v
	}
}

// pinHistograms pins, for every histogram series of endpoint ep, the
// bucket values at scrape index k.
func (st *store) pinHistograms(ep, k int) {
	if k < 0 {
		return
	}
	for _, f := range st.families {
		if f.typ != typeHistogram {
			continue
		}
		for _, sd := range f.series {
			if sd.ep != ep {
				continue
			}
			for _, b := range sd.buckets {
				b.pin(k)
			}
		}
	}
}

// markStart records the profiling start and pins the buckets at the last
// scrape at or before it (later scrapes stamped before it pin themselves
// in add).
func (st *store) markStart(t int64) {
	st.profStartNs = t
	for i, e := range st.eps {
		st.pinHistograms(i, e.idxLE(t))
	}
}

// markEnd records the profiling end and pins the buckets at the first
// scrape at or after it when that scrape already exists.
func (st *store) markEnd(t int64) {
	st.profEndNs = t
	for i, e := range st.eps {
		if g := e.idxGE(t); g < len(e.times) {
			st.pinHistograms(i, g)
		}
	}
}
