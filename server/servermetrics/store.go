package servermetrics

import (
	"math"
	"sort"
)

// endpointData is the collection state of one scrape URL.
type endpointData struct {
	url   string
	times []int64 // Unix ns of every successful scrape, ascending

	fetches      int   // attempts
	failures     int   // failed attempts
	latencyNs    int64 // summed fetch latency of all attempts
	firstFetchNs int64
	lastFetchNs  int64
	updates      []int64 // times of successful scrapes whose content changed
	lastHash     uint64
	hasHash      bool

	failing    bool   // the last attempt failed
	lastFailNs int64  // when a failure was last logged
	lastErr    string // text of the most recent failure
}

// seriesData holds the samples of one (endpoint, label set) series. Sample
// k of the endpoint's times lives at index k-first of every track; NaN (or
// an index past the end of a track) means "absent from that scrape".
type seriesData struct {
	ep     int
	labels []labelPair
	key    string
	first  int

	vals []float64 // gauge, counter, unknown

	// histogram tracks
	les     []float64
	buckets []*bucketAcc // per le, parallel to les (constant memory)
	sum     []float64
	count   []float64
}

// familyData is one exported metric family across all endpoints.
type familyData struct {
	name   string
	typ    metricType
	help   string
	series map[string]*seriesData // key: endpoint index + label key
}

// store is the time-series store; every method requires the caller to hold
// the Scraper's mutex.
type store struct {
	eps      []*endpointData
	families map[string]*familyData
	conflict map[string]bool // type conflicts already logged

	profStartNs, profEndNs int64 // window marks (0: not marked)
}

func newStore(urls []string) *store {
	st := &store{families: map[string]*familyData{}, conflict: map[string]bool{}}
	for _, u := range urls {
		st.eps = append(st.eps, &endpointData{url: u})
	}
	return st
}

// appendTrack appends v at position n of track (padding with NaN).
func appendTrack(track []float64, n int, v float64) []float64 {
	for len(track) < n {
		track = append(track, math.NaN())
	}
	return append(track, v)
}

// at returns the value of track at scrape index k of a series that starts
// at first, NaN when absent.
func at(track []float64, first, k int) float64 {
	i := k - first
	if i < 0 || i >= len(track) {
		return math.NaN()
	}
	return track[i]
}

// add records one successful scrape of endpoint ep at time t. It returns the
// names of families dropped for a type conflict (first time only).
func (st *store) add(ep int, t int64, fams []parsedFamily) (conflicts []string) {
	e := st.eps[ep]
	k := len(e.times)
	e.times = append(e.times, t)
	for _, pf := range fams {
		f := st.families[pf.name]
		if f == nil {
			f = &familyData{name: pf.name, typ: pf.typ, help: pf.help, series: map[string]*seriesData{}}
			st.families[pf.name] = f
		} else if f.typ != pf.typ {
			if !st.conflict[pf.name] {
				st.conflict[pf.name] = true
				conflicts = append(conflicts, pf.name)
			}
			continue
		}
		if f.help == "" {
			f.help = pf.help
		}
		for i := range pf.series {
			ps := &pf.series[i]
			lk := labelKey(ps.labels)
			key := itoa(ep) + "\x00" + lk
			s := f.series[key]
			if s == nil {
				s = &seriesData{ep: ep, labels: ps.labels, key: lk, first: k}
				f.series[key] = s
			}
			n := k - s.first
			if f.typ != typeHistogram {
				if len(s.vals) > n { // duplicate line in one scrape: last wins
					s.vals[n] = ps.value
					continue
				}
				s.vals = appendTrack(s.vals, n, ps.value)
				continue
			}
			if len(s.count) > n {
				continue // duplicate histogram in one scrape: keep the first
			}
			prevCount := math.NaN()
			for j := len(s.count) - 1; j >= 0; j-- {
				if !math.IsNaN(s.count[j]) {
					prevCount = s.count[j]
					break
				}
			}
			reset := ps.count < prevCount
			s.count = appendTrack(s.count, n, ps.count)
			s.sum = appendTrack(s.sum, n, ps.sum)
			for j, le := range ps.les {
				bi := sort.SearchFloat64s(s.les, le)
				if bi == len(s.les) || s.les[bi] != le {
					s.les = append(s.les, 0)
					copy(s.les[bi+1:], s.les[bi:])
					s.les[bi] = le
					s.buckets = append(s.buckets, nil)
					copy(s.buckets[bi+1:], s.buckets[bi:])
					s.buckets[bi] = newBucketAcc(k, s.first > 0 || k > s.first)
				}
				s.buckets[bi].observe(k, ps.counts[j], reset)
			}
			// Samples that bound a window already marked keep their buckets.
			if (st.profStartNs != 0 && t <= st.profStartNs) ||
				(st.profEndNs != 0 && t >= st.profEndNs && (k == 0 || e.times[k-1] < st.profEndNs)) {
				for _, b := range s.buckets {
					b.pin(k)
				}
			}
		}
	}
	return conflicts
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	p := len(b)
	for i > 0 {
		p--
		b[p] = byte('0' + i%10)
		i /= 10
	}
	return string(b[p:])
}

// idxLE returns the last scrape index of e at or before t, or -1.
func (e *endpointData) idxLE(t int64) int {
	return sort.Search(len(e.times), func(i int) bool { return e.times[i] > t }) - 1
}

// idxGE returns the first scrape index of e at or after t (len when none).
func (e *endpointData) idxGE(t int64) int {
	return sort.Search(len(e.times), func(i int) bool { return e.times[i] >= t })
}

// increase is the Prometheus-style increase of a cumulative track between
// the last sample at or before scrape index ref and the last sample at or
// before scrape index end. A decrease is a reset: the post-reset value is
// added. resets, when non-nil, is the track whose decrease marks a reset of
// this one (a histogram's count); otherwise the track's own decrease does.
// A series that first appeared after its endpoint's first scrape started at
// zero, so its first value counts as increase. ok is false when the series
// has no sample at or before end.
func increase(track, resets []float64, first, ref, end int) (inc float64, ok bool) {
	if resets == nil {
		resets = track
	}
	prev, prevR := math.NaN(), math.NaN()
	for k := min(ref, first+len(track)-1); k >= first; k-- {
		if v := at(track, first, k); !math.IsNaN(v) {
			prev, prevR = v, at(resets, first, k)
			ok = true // a real sample at or before ref: increase at least 0
			break
		}
	}
	if math.IsNaN(prev) && first > 0 {
		prev, prevR = 0, 0 // created during the collection: started at zero
	}
	for k := max(ref+1, first); k <= end; k++ {
		v := at(track, first, k)
		if math.IsNaN(v) {
			continue
		}
		r := at(resets, first, k)
		ok = true
		switch {
		case math.IsNaN(prev):
			// first sample ever and the series existed from the start:
			// it is the reference, no increase.
		case r < prevR:
			inc += v
		default:
			if d := v - prev; d > 0 {
				inc += d
			}
		}
		prev, prevR = v, r
	}
	return inc, ok
}
