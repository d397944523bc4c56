package metrics

import (
	"math"
	"slices"
)

// Stat is the aggregate of one metric over a set of records (the stat
// object of profile_export_aiperf.json, docs/artifacts.md):
// mean, extremes, population standard deviation, the nine percentiles, the
// sum and the number of values. Percentiles are exact (Percentile).
type Stat struct {
	Unit                                           string
	Avg, Min, Max, Std                             float64
	P1, P5, P10, P25, P50, P75, P90, P95, P99, Sum float64
	Count                                          int
}

// statPercentiles are the percentiles of a Stat, in export order.
var statPercentiles = [...]float64{1, 5, 10, 25, 50, 75, 90, 95, 99}

// Percentile returns the p-th percentile (0 ≤ p ≤ 100) of sorted values
// with linear interpolation between the closest ranks, as numpy's default
// ("linear") method: rank = p/100·(n−1). It returns NaN for an empty slice.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if n == 1 || p <= 0 {
		return sorted[0]
	}
	if p >= 100 {
		return sorted[n-1]
	}
	rank := p / 100 * float64(n-1)
	lo := int(math.Floor(rank))
	hi := lo + 1
	if hi >= n {
		return sorted[n-1]
	}
	frac := rank - float64(lo)
	a, b := sorted[lo], sorted[hi]
	// numpy's lerp: a + (b-a)*t, switching to b - (b-a)*(1-t) for t ≥ 0.5
	// to stay monotone and exact at the ends.
	if frac >= 0.5 {
		return b - (b-a)*(1-frac)
	}
	return a + (b-a)*frac
}

// NewStat computes the Stat of values (which it sorts in place) with the
// given unit. The standard deviation is the population one (ddof 0), 0 for
// a single value. An empty slice gives a Stat with Count 0 and NaN fields.
func NewStat(unit string, values []float64) Stat {
	s := Stat{Unit: unit, Count: len(values)}
	if len(values) == 0 {
		n := math.NaN()
		s.Avg, s.Min, s.Max, s.Std, s.Sum = n, n, n, n, n
		s.P1, s.P5, s.P10, s.P25, s.P50, s.P75, s.P90, s.P95, s.P99 = n, n, n, n, n, n, n, n, n
		return s
	}
	slices.Sort(values)
	sum := 0.0
	for _, x := range values {
		sum += x
	}
	mean := sum / float64(len(values))
	ss := 0.0
	for _, x := range values {
		d := x - mean
		ss += d * d
	}
	s.Avg, s.Sum = mean, sum
	s.Min, s.Max = values[0], values[len(values)-1]
	s.Std = math.Sqrt(ss / float64(len(values)))
	ps := s.percentiles()
	for i, p := range statPercentiles {
		*ps[i] = Percentile(values, p)
	}
	return s
}

// percentiles returns pointers to the percentile fields in export order.
func (s *Stat) percentiles() [9]*float64 {
	return [9]*float64{&s.P1, &s.P5, &s.P10, &s.P25, &s.P50, &s.P75, &s.P90, &s.P95, &s.P99}
}

// Percentile returns the field for p ∈ {1,5,10,25,50,75,90,95,99}, or NaN.
func (s Stat) Percentile(p int) float64 {
	ps := s.percentiles()
	for i, q := range statPercentiles {
		if int(q) == p {
			return *ps[i]
		}
	}
	return math.NaN()
}
