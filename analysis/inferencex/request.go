package inferencex

import (
	"math"
	"slices"
)

// qpsFig is the completions-per-second distribution: requests finishing
// in consecutive 1 s windows from the first completion, over the full
// windows that end at or before the last completion. Without a full
// window only Mean (count / span) is set.
type qpsFig struct {
	ok      bool // at least two completions over a positive span
	samples int
	d       dist    // over the windows (n = samples)
	mean    float64 // when samples == 0
}

// requestFigures are the request-side numbers of the result, computed
// over the kept records.
type requestFigures struct {
	kept int
	qps  qpsFig

	ttft, e2el, itl, fullITL   dist // seconds
	intvty, fullIntvty, e2eNI  dist // tokens/s/user
	input, outActual, outExpec dist // tokens

	hasTput        bool
	durationSec    float64 // max end − min start over records with both
	inTok, outTok  float64
	inTPS, outTPS  float64
	totTPS         float64
	theoretical    float64
	theoreticalOK  bool
	theoreticalSrc string // "records" or "aggregate"
	respCacheHit   float64
	respCacheHitOK bool
	// inputSum and outputSum are Σ ISL and Σ OSL over the kept records
	// (the server token totals' fallback).
	inputSum, outputSum float64
}

// computeRequests derives the request figures from the kept records.
// aggTheoretical is the theoretical hit rate read from the aggregate
// JSON, used when the records carry no block counts.
func computeRequests(rs *records, aggTheoretical float64, aggTheoreticalOK bool) requestFigures {
	f := requestFigures{kept: len(rs.kept)}
	f.qps = computeQPS(rs.kept)

	var ttft, e2el, itl, fitl, isl, osl, exp, ratios []float64
	var hit, total int64
	cacheAll := len(rs.kept) > 0
	var cacheSum, islSum float64
	for i := range rs.kept {
		r := &rs.kept[i]
		// Latencies: positive values only, ms → s.
		for _, p := range []struct {
			v   float64
			dst *[]float64
		}{{r.ttftMs, &ttft}, {r.e2elMs, &e2el}, {r.itlMs, &itl}, {r.fullITLMs, &fitl}} {
			if r := p.v; r > 0 && !math.IsNaN(r) {
				*p.dst = append(*p.dst, r/1000)
			}
		}
		if !math.IsNaN(r.isl) {
			isl = append(isl, math.Trunc(r.isl))
		}
		if !math.IsNaN(r.osl) {
			osl = append(osl, math.Trunc(r.osl))
		}
		if !math.IsNaN(r.expectedOut) {
			exp = append(exp, r.expectedOut)
		}
		// e2e-normalized interactivity pairs latency and OSL within the
		// record: seconds per output token.
		if r.e2elMs > 0 && r.osl > 0 && !math.IsNaN(r.e2elMs) && !math.IsNaN(r.osl) {
			ratios = append(ratios, r.e2elMs/1000/r.osl)
		}
		if r.total > 0 {
			hit += r.hit
			total += r.total
		}
		if math.IsNaN(r.cacheRead) || math.IsNaN(r.isl) {
			cacheAll = false
		} else {
			cacheSum += r.cacheRead
			islSum += r.isl
		}
	}
	f.ttft, f.e2el, f.itl, f.fullITL = newDist(ttft), newDist(e2el), newDist(itl), newDist(fitl)
	f.intvty = f.itl.inverted(reciprocals(itl))
	f.fullIntvty = f.fullITL.inverted(reciprocals(fitl))
	f.e2eNI = newDist(ratios).inverted(reciprocals(ratios))
	f.input, f.outActual, f.outExpec = newDist(isl), newDist(osl), newDist(exp)
	for _, x := range isl {
		f.inputSum += x
	}
	for _, x := range osl {
		f.outputSum += x
	}

	// Throughput over the span of the kept records.
	minStart, maxEnd := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range rs.kept {
		r := &rs.kept[i]
		if r.startNs != 0 {
			minStart = min(minStart, r.startNs)
		}
		if r.endNs != 0 {
			maxEnd = max(maxEnd, r.endNs)
		}
	}
	if minStart != math.MaxInt64 && maxEnd != math.MinInt64 && maxEnd > minStart {
		f.hasTput = true
		f.durationSec = float64(maxEnd-minStart) / 1e9
		f.inTok, f.outTok = f.inputSum, f.outputSum
		f.inTPS = f.inTok / f.durationSec
		f.outTPS = f.outTok / f.durationSec
		f.totTPS = (f.inTok + f.outTok) / f.durationSec
	}
	switch {
	case total > 0:
		f.theoretical, f.theoreticalOK, f.theoreticalSrc = float64(hit)/float64(total), true, "records"
	case aggTheoreticalOK:
		f.theoretical, f.theoreticalOK, f.theoreticalSrc = aggTheoretical, true, "aggregate"
	}
	if cacheAll && islSum > 0 {
		f.respCacheHit, f.respCacheHitOK = cacheSum/islSum, true
	}
	return f
}

func reciprocals(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if x > 0 {
			out = append(out, 1/x)
		}
	}
	return out
}

// computeQPS counts completions (request_end_ns) in 1 s windows.
func computeQPS(kept []record) qpsFig {
	ends := make([]int64, 0, len(kept))
	for i := range kept {
		if kept[i].endNs != 0 {
			ends = append(ends, kept[i].endNs)
		}
	}
	if len(ends) < 2 {
		return qpsFig{}
	}
	slices.Sort(ends)
	first, last := ends[0], ends[len(ends)-1]
	if last <= first {
		return qpsFig{}
	}
	const window = int64(1e9)
	var counts []float64
	j := 0
	for start := first; start+window <= last; start += window {
		for j < len(ends) && ends[j] < start {
			j++
		}
		k := j
		for k < len(ends) && ends[k] < start+window {
			k++
		}
		counts = append(counts, float64(k-j))
		j = k
	}
	q := qpsFig{ok: true, samples: len(counts)}
	if len(counts) > 0 {
		q.d = newDist(counts)
	} else {
		q.mean = float64(len(ends)) / (float64(last-first) / 1e9)
	}
	return q
}
