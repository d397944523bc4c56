package servermetrics

import (
	"math"

	"github.com/agentperf/agentperf/server/engines"
	"runtime/debug"
	"time"
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
		return st.counterIncrease(names, func(e *endpointData) int { return e.idxLE(from) })
	}
	h, okH := inc(namesHits)
	q, okQ := inc(namesQueries)
	lf.GPUPrefixHitRate, lf.GPUPrefixHitRateValid = ratio(h, q, okH, okQ)
	if !lf.GPUPrefixHitRateValid {
		lf.GPUPrefixHitRate, lf.GPUPrefixHitRateValid = st.cachedRate(func(e *endpointData) int { return e.idxLE(from) })
	}
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

// RecentFigures are server figures over the recent past, for a live view
// that must show what the server does now rather than since the start.
type RecentFigures struct {
	// Window is the span the figures cover: from the last scrape at or
	// before now − window to the latest scrape (shorter early in a run).
	Window time.Duration
	// GPUPrefixHitRate is Σ Δprefix_cache_hits / Σ Δprefix_cache_queries
	// over the window; Valid is false when queries did not increase.
	GPUPrefixHitRate      float64
	GPUPrefixHitRateValid bool
	// Preemptions is the increase of the preemption counter over the
	// window, PreemptionsTotal since the first scrape; Valid is false
	// when the server exports no such counter.
	Preemptions, PreemptionsTotal float64
	PreemptionsValid              bool
}

// Recent returns the figures over the last window of scrapes (the window
// is measured on each endpoint's own scrape times).
func (s *Scraper) Recent(window time.Duration) RecentFigures {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	var rf RecentFigures
	// The window's reference scrape, per endpoint; the span covered is
	// the longest of them.
	recent := func(e *endpointData) int {
		last := len(e.times) - 1
		ref := max(0, e.idxLE(e.times[last]-window.Nanoseconds()))
		rf.Window = max(rf.Window, time.Duration(e.times[last]-e.times[ref]))
		return ref
	}
	fromFirst := func(*endpointData) int { return 0 }
	inc := func(names []string, fromStart bool) (float64, bool) {
		if fromStart {
			return st.counterIncrease(names, fromFirst)
		}
		return st.counterIncrease(names, recent)
	}
	h, okH := inc(namesHits, false)
	q, okQ := inc(namesQueries, false)
	rf.GPUPrefixHitRate, rf.GPUPrefixHitRateValid = ratio(h, q, okH, okQ)
	if !rf.GPUPrefixHitRateValid {
		rf.GPUPrefixHitRate, rf.GPUPrefixHitRateValid = st.cachedRate(recent)
	}
	rf.Preemptions, rf.PreemptionsValid = inc(namesPreemptions, false)
	rf.PreemptionsTotal, _ = inc(namesPreemptions, true)
	return rf
}

// cachedRate is the GPU prefix-cache hit rate of an engine without hit
// and query counters: the increase of its cached-token counter over that
// of its prompt tokens (plus the cached ones when its prompt counter
// excludes them; engines.Engine), from scrape index ref(e) to the latest.
// For a cache-source-labelled counter only the device tier counts. The
// caller holds the Scraper's mutex.
func (st *store) cachedRate(ref func(e *endpointData) int) (float64, bool) {
	for _, e := range engines.All() {
		var c float64
		var okC bool
		for _, n := range e.CachedTokens {
			f := st.families[n]
			if f == nil || f.typ != typeCounter {
				continue
			}
			for _, sd := range f.series {
				if e.CacheSourceLabel != "" {
					if v, has := labelValue(sd.labels, e.CacheSourceLabel); has && v != "device" {
						continue
					}
				}
				ep := st.eps[sd.ep]
				if len(ep.times) == 0 {
					continue
				}
				if v, ok := increase(sd.vals, nil, sd.first, ref(ep), len(ep.times)-1); ok {
					c += v
					okC = true
				}
			}
			if okC {
				break
			}
		}
		if !okC {
			continue
		}
		p, okP := st.counterIncrease(e.PromptTokens, ref)
		if e.PromptExcludesCached {
			all, okAll := st.counterIncrease(e.CachedTokens, ref)
			p, okP = p+all, okP && okAll
		}
		if r, ok := ratio(c, p, okC, okP); ok {
			return r, true
		}
	}
	return 0, false
}

// Engine names the server's engine from the metric families scraped so
// far (engines.Detect); the zero Detection before the first successful
// scrape.
func (s *Scraper) Engine() engines.Detection {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.st.families))
	for n := range s.st.families {
		names = append(names, n)
	}
	return engines.Detect(names)
}

// counterIncrease sums the increase of the first of names that is a
// counter, over all its series, from scrape index ref(e) of each series'
// endpoint to that endpoint's latest scrape; ok is false when no series
// has a sample. The caller holds the Scraper's mutex.
func (st *store) counterIncrease(names []string, ref func(e *endpointData) int) (float64, bool) {
	for _, n := range names {
		f := st.families[n]
		if f == nil || f.typ != typeCounter {
			continue
		}
		var sum float64
		var found bool
		for _, sd := range f.series {
			e := st.eps[sd.ep]
			if len(e.times) == 0 {
				continue
			}
			if v, ok := increase(sd.vals, nil, sd.first, ref(e), len(e.times)-1); ok {
				sum += v
				found = true
			}
		}
		if found {
			return sum, true
		}
	}
	return 0, false
}

// labelValue is the value of label name in ls.
func labelValue(ls []labelPair, name string) (string, bool) {
	for _, l := range ls {
		if l.name == name {
			return l.value, true
		}
	}
	return "", false
}
