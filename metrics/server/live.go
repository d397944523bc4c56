package server

import (
	"math"
	"runtime/debug"
)

// LiveFigures are the latest server figures for a progress view.
type LiveFigures struct {
	// GPUPrefixHitRate is Σ Δprefix_cache_hits / Σ Δprefix_cache_queries
	// since the profiling start (since the first scrape before it), as in
	// Derived; Valid is false until queries have increased.
	GPUPrefixHitRate      float64
	GPUPrefixHitRateValid bool
	// ExternalHitRate is the conditional external-tier rate over the same
	// span.
	ExternalHitRate      float64
	ExternalHitRateValid bool
	// KVUsage is the latest KV usage (0–1) averaged across engines.
	KVUsage      float64
	KVUsageValid bool
	// Running and Waiting are the latest request counts summed across
	// engines (counts add up; usages do not).
	Running, Waiting float64
	QueueValid       bool
	// Scrapes and ScrapeFailures count all and failed fetches so far.
	Scrapes, ScrapeFailures int
	// Stopped is true once an internal error stopped the collection
	// (Scraper.Err); every other field is then zero.
	Stopped bool
}

// Live returns the latest figures. It is cheap enough to call every
// second. After an internal error (see Err) it returns zero figures with
// Stopped set.
func (s *Scraper) Live() (lf LiveFigures) {
	defer func() {
		if v := recover(); v != nil {
			s.disable("computing the live figures", v, debug.Stack())
			lf = LiveFigures{Stopped: true}
		}
	}()
	if s.Err() != nil {
		return LiveFigures{Stopped: true}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	for _, e := range st.eps {
		lf.Scrapes += e.fetches
		lf.ScrapeFailures += e.failures
	}
	from := s.profStartNs
	if from == 0 {
		from = math.MinInt64
	}
	inc := func(names []string) (float64, bool) {
		for _, n := range names {
			f := st.families[n]
			if f == nil || f.typ != typeCounter {
				continue
			}
			var sum float64
			var any bool
			for _, sd := range f.series {
				e := st.eps[sd.ep]
				if v, ok := increase(sd.vals, nil, sd.first, e.idxLE(from), len(e.times)-1); ok {
					sum += v
					any = true
				}
			}
			if any {
				return sum, true
			}
		}
		return 0, false
	}
	h, okH := inc(namesHits)
	q, okQ := inc(namesQueries)
	lf.GPUPrefixHitRate, lf.GPUPrefixHitRateValid = ratio(h, q, okH, okQ)
	eh, okEH := inc(namesExtHits)
	eq, okEQ := inc(namesExtQuery)
	lf.ExternalHitRate, lf.ExternalHitRateValid = ratio(eh, eq, okEH, okEQ)

	latest := func(names []string) (sum float64, n int) {
		for _, name := range names {
			f := st.families[name]
			if f == nil || !f.typ.gaugeLike() {
				continue
			}
			for _, sd := range f.series {
				e := st.eps[sd.ep]
				if v := at(sd.vals, sd.first, len(e.times)-1); !math.IsNaN(v) {
					sum += v
					n++
				}
			}
			if n > 0 {
				return sum, n
			}
		}
		return 0, 0
	}
	if kv, n := latest(namesKVUsage); n > 0 {
		lf.KVUsage, lf.KVUsageValid = kv/float64(n), true
	}
	r, nr := latest(namesRunning)
	w, nw := latest(namesWaiting)
	lf.Running, lf.Waiting, lf.QueueValid = r, w, nr > 0 || nw > 0
	return lf
}
