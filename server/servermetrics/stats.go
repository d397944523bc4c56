package servermetrics

import (
	"math"
	"slices"
)

// quantiles are the percentiles aiperf writes, as fractions.
var quantiles = [...]float64{0.01, 0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99}

// summary holds avg/min/max/std (population) and the exact percentiles
// (linear interpolation between closest ranks, as numpy) of xs.
type summary struct {
	n             int
	avg, min, max float64
	std           float64
	p             [len(quantiles)]float64
}

// summarize sorts xs in place and summarises it; n == 0 when xs is empty.
func summarize(xs []float64) summary {
	var s summary
	s.n = len(xs)
	if s.n == 0 {
		return s
	}
	slices.Sort(xs)
	s.min, s.max = xs[0], xs[len(xs)-1]
	var sum float64
	for _, x := range xs {
		sum += x
	}
	s.avg = sum / float64(s.n)
	var ss float64
	for _, x := range xs {
		d := x - s.avg
		ss += d * d
	}
	s.std = math.Sqrt(ss / float64(s.n))
	for i, q := range quantiles {
		s.p[i] = percentileSorted(xs, q)
	}
	return s
}

// percentileSorted is numpy's default ("linear") percentile of sorted xs.
func percentileSorted(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	if lo >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	frac := pos - float64(lo)
	return xs[lo] + (xs[lo+1]-xs[lo])*frac
}

// bucketQuantile estimates quantile q from cumulative bucket counts (by
// ascending upper bound), interpolating linearly inside the bucket that
// holds the rank, as Prometheus's histogram_quantile does. The lower bound
// of the first bucket is 0 when its upper bound is positive; a rank in the
// +Inf bucket returns the largest finite bound.
func bucketQuantile(q float64, les, cum []float64) float64 {
	if len(les) == 0 {
		return math.NaN()
	}
	total := cum[len(cum)-1]
	if !(total > 0) {
		return math.NaN()
	}
	rank := q * total
	for i, c := range cum {
		if c < rank {
			continue
		}
		hi := les[i]
		if math.IsInf(hi, 1) {
			for j := i - 1; j >= 0; j-- {
				if !math.IsInf(les[j], 1) {
					return les[j]
				}
			}
			return math.NaN()
		}
		lo, below := 0.0, 0.0
		if i > 0 {
			lo, below = les[i-1], cum[i-1]
		} else if hi <= 0 {
			return hi
		}
		inBucket := c - below
		if inBucket <= 0 {
			return hi
		}
		return lo + (hi-lo)*(rank-below)/inBucket
	}
	return les[len(les)-1]
}

// fptr returns a pointer to x, or nil when x is NaN or infinite (aiperf
// omits such values).
func fptr(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}
