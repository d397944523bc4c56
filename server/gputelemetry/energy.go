package gputelemetry

import (
	"math"
	"sort"
)

// Sample is one value of one field of one GPU at a time (Unix ns).
type Sample struct {
	T int64
	V float64
}

// bracket returns the index of the last sample at or before t and of the
// first at or after t; ok is false when the samples do not bracket t.
func bracket(s []Sample, t int64) (lo, hi int, ok bool) {
	hi = sort.Search(len(s), func(i int) bool { return s[i].T >= t })
	if hi == len(s) {
		return 0, 0, false
	}
	if s[hi].T == t {
		return hi, hi, true
	}
	if hi == 0 {
		return 0, 0, false
	}
	return hi - 1, hi, true
}

// At is the value at t, linearly interpolated between the samples around
// it; ok is false when the samples do not bracket t.
func At(s []Sample, t int64) (float64, bool) {
	lo, hi, ok := bracket(s, t)
	if !ok {
		return 0, false
	}
	if lo == hi {
		return s[lo].V, true
	}
	a, b := s[lo], s[hi]
	return a.V + (b.V-a.V)*float64(t-a.T)/float64(b.T-a.T), true
}

// clip returns the samples of s that matter over [a, b]: the value at a,
// the samples strictly inside, the value at b. ok is false when s does
// not bracket both bounds.
func clip(s []Sample, a, b int64) ([]Sample, bool) {
	va, okA := At(s, a)
	vb, okB := At(s, b)
	if !okA || !okB || b <= a {
		return nil, false
	}
	out := []Sample{{a, va}}
	for _, x := range s {
		if x.T > a && x.T < b {
			out = append(out, x)
		}
	}
	return append(out, Sample{b, vb}), true
}

// Integrate is the integral of the piecewise-linear curve through s over
// [a, b] in value·seconds (watts → joules): trapezoids, with the curve's
// values at a and b interpolated. ok is false when s does not bracket
// both bounds.
func Integrate(s []Sample, a, b int64) (float64, bool) {
	c, ok := clip(s, a, b)
	if !ok {
		return 0, false
	}
	var sum float64
	for i := 1; i < len(c); i++ {
		sum += float64(c[i].T-c[i-1].T) / 1e9 * (c[i].V + c[i-1].V) / 2
	}
	return sum, true
}

// Increase is how much the counter s grew over [a, b], its values at the
// bounds interpolated. A drop is a reset: the counter restarted from zero,
// so the value after the drop is added (Prometheus's increase()). ok is
// false when s does not bracket both bounds.
func Increase(s []Sample, a, b int64) (float64, bool) {
	c, ok := clip(s, a, b)
	if !ok {
		return 0, false
	}
	var inc float64
	for i := 1; i < len(c); i++ {
		if d := c[i].V - c[i-1].V; d >= 0 {
			inc += d
		} else {
			inc += c[i].V
		}
	}
	return inc, true
}

// Quantile is the time-weighted q-quantile (0 < q < 1) of the sum of the
// piecewise-linear curves over [a, b]: the value the summed curve stays at
// or below for a fraction q of the window, each linear piece's values
// spread evenly over its duration. ok is false when a curve does not
// bracket both bounds.
func Quantile(curves [][]Sample, a, b int64, q float64) (float64, bool) {
	if len(curves) == 0 || b <= a {
		return 0, false
	}
	// The sum is linear between the union of the curves' knots.
	var knots []int64
	clipped := make([][]Sample, len(curves))
	for i, s := range curves {
		c, ok := clip(s, a, b)
		if !ok {
			return 0, false
		}
		clipped[i] = c
		for _, x := range c {
			knots = append(knots, x.T)
		}
	}
	sort.Slice(knots, func(i, j int) bool { return knots[i] < knots[j] })
	knots = dedup(knots)
	sum := make([]float64, len(knots))
	for _, c := range clipped {
		for k, t := range knots {
			v, _ := At(c, t)
			sum[k] += v
		}
	}
	type seg struct{ lo, hi, dur float64 }
	segs := make([]seg, 0, len(knots))
	lo, hi := math.Inf(1), math.Inf(-1)
	for k := 1; k < len(knots); k++ {
		x, y := sum[k-1], sum[k]
		s := seg{math.Min(x, y), math.Max(x, y), float64(knots[k] - knots[k-1])}
		segs = append(segs, s)
		lo, hi = math.Min(lo, s.lo), math.Max(hi, s.hi)
	}
	target := float64(b-a) * q
	below := func(v float64) float64 {
		var t float64
		for _, s := range segs {
			switch {
			case v >= s.hi:
				t += s.dur
			case v > s.lo:
				t += s.dur * (v - s.lo) / (s.hi - s.lo)
			}
		}
		return t
	}
	for range 100 {
		mid := lo + (hi-lo)/2
		if below(mid) >= target {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

func dedup(ts []int64) []int64 {
	out := ts[:0]
	for i, t := range ts {
		if i == 0 || t != ts[i-1] {
			out = append(out, t)
		}
	}
	return out
}
