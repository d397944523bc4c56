package inferencex

import (
	"math"
	"slices"
)

// percentile is the p-th percentile (0..100) of sorted by linear
// interpolation between the closest ranks (numpy's default).
func percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	switch n {
	case 0:
		return math.NaN()
	case 1:
		return sorted[0]
	}
	pos := p / 100 * float64(n-1)
	lo := int(math.Floor(pos))
	if lo >= n-1 {
		return sorted[n-1]
	}
	frac := pos - float64(lo)
	return sorted[lo] + (sorted[lo+1]-sorted[lo])*frac
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// pstdev is the population standard deviation (0 for a single value).
func pstdev(xs []float64) float64 {
	if len(xs) < 2 {
		if len(xs) == 1 {
			return 0
		}
		return math.NaN()
	}
	m := mean(xs)
	var s float64
	for _, x := range xs {
		d := x - m
		s += d * d
	}
	return math.Sqrt(s / float64(len(xs)))
}

// dist is the distribution summary InferenceX writes for a metric: mean,
// p50, p75, p90, p95 and the population std. Empty when there are no
// values.
type dist struct {
	n                            int
	mean, p50, p75, p90, p95, sd float64
}

func newDist(xs []float64) dist {
	if len(xs) == 0 {
		return dist{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return dist{n: len(s), mean: mean(s), p50: percentile(s, 50), p75: percentile(s, 75),
		p90: percentile(s, 90), p95: percentile(s, 95), sd: pstdev(s)}
}

// inverted is the distribution of a "higher is better" rate derived from
// a "lower is better" quantity (seconds per token): each statistic is the
// reciprocal of the matching statistic of d (so p90 is the slow tail),
// and std is the std of the per-request reciprocals recip.
func (d dist) inverted(recip []float64) dist {
	if d.n == 0 {
		return dist{}
	}
	inv := func(x float64) float64 {
		if x > 0 {
			return 1 / x
		}
		return math.NaN()
	}
	return dist{n: d.n, mean: inv(d.mean), p50: inv(d.p50), p75: inv(d.p75), p90: inv(d.p90), p95: inv(d.p95),
		sd: pstdev(recip)}
}

// obj returns the v3 nested block {mean, p50, p75, p90, p95, std}, or an
// empty object without values.
func (d dist) obj() obj {
	if d.n == 0 {
		return obj{}
	}
	return obj{{"mean", num(d.mean)}, {"p50", num(d.p50)}, {"p75", num(d.p75)},
		{"p90", num(d.p90)}, {"p95", num(d.p95)}, {"std", num(d.sd)}}
}

// flat appends the v2 keys mean_X, p75_X, p90_X, p95_X, std_X (none
// without values).
func (d dist) flat(o obj, name string) obj {
	if d.n == 0 {
		return o
	}
	return append(o, field{"mean_" + name, num(d.mean)}, field{"p75_" + name, num(d.p75)},
		field{"p90_" + name, num(d.p90)}, field{"p95_" + name, num(d.p95)}, field{"std_" + name, num(d.sd)})
}
