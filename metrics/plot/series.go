package plot

import (
	"math"
	"sort"

	"github.com/agentperf/agentperf/server/servermetrics"
)

// point is one aggregated slice value at x seconds.
type point struct{ x, y float64 }

// agg aggregates the slices of several series that share a start time.
type agg int

const (
	aggMean agg = iota // gauges per engine: mean, never sum
	aggMax
	aggSum // counts (requests running) and counter rates/totals
)

// seriesFilter selects series of a metric; nil keeps all.
type seriesFilter func(*servermetrics.Series) bool

func labelIs(k, v string) seriesFilter {
	return func(s *servermetrics.Series) bool { return s.Labels[k] == v }
}

// sliceValue picks the field of a slice: gauges avg (fallback max),
// counters rate or total.
type sliceValue func(*servermetrics.Slice) (float64, bool)

func gaugeValue(sl *servermetrics.Slice) (float64, bool) {
	if sl.Avg != nil {
		return *sl.Avg, true
	}
	if sl.Max != nil {
		return *sl.Max, true
	}
	return 0, false
}

func rateValue(sl *servermetrics.Slice) (float64, bool) {
	if sl.Rate != nil {
		return *sl.Rate, true
	}
	if sl.Total != nil && sl.EndNs > sl.StartNs {
		return *sl.Total / (float64(sl.EndNs-sl.StartNs) / 1e9), true
	}
	return 0, false
}

func totalValue(sl *servermetrics.Slice) (float64, bool) {
	if sl.Total != nil {
		return *sl.Total, true
	}
	return 0, false
}

// timeline is an aggregated per-slice series keyed by slice start.
type timeline struct {
	starts []int64
	ends   map[int64]int64
	vals   map[int64]float64
}

func (t *timeline) empty() bool { return t == nil || len(t.starts) == 0 }

// collect aggregates metric name (the first of names present) across the
// series passing keep, by slice start, over the warmup and the profiling
// slices (the website merges them the same way).
func collect(ex *servermetrics.Export, names []string, keep seriesFilter, val sliceValue, how agg) *timeline {
	if ex == nil {
		return nil
	}
	var ms []*servermetrics.Metric
	for _, n := range names {
		for _, src := range []map[string]*servermetrics.Metric{ex.WarmupMetrics, ex.Metrics} {
			if mm := src[n]; mm != nil && len(mm.Series) > 0 {
				ms = append(ms, mm)
			}
		}
		if len(ms) > 0 {
			break
		}
	}
	if len(ms) == 0 {
		return nil
	}
	t := &timeline{ends: map[int64]int64{}, vals: map[int64]float64{}}
	n := map[int64]int{}
	for _, m := range ms {
		for _, s := range m.Series {
			if keep != nil && !keep(s) {
				continue
			}
			for i := range s.Timeslices {
				sl := &s.Timeslices[i]
				v, ok := val(sl)
				if !ok || math.IsNaN(v) {
					continue
				}
				k := sl.StartNs
				if _, seen := t.vals[k]; !seen {
					t.starts = append(t.starts, k)
					t.ends[k] = sl.EndNs
					t.vals[k] = v
					n[k] = 1
					continue
				}
				switch how {
				case aggMax:
					t.vals[k] = math.Max(t.vals[k], v)
				default:
					t.vals[k] += v
				}
				n[k]++
			}
		}
	}
	if how == aggMean {
		for k := range t.vals {
			t.vals[k] /= float64(n[k])
		}
	}
	sort.Slice(t.starts, func(i, j int) bool { return t.starts[i] < t.starts[j] })
	if len(t.starts) == 0 {
		return nil
	}
	return t
}

// points projects a timeline to x (seconds since zero, slice midpoint) and
// y = scale × value.
func (t *timeline) points(zero int64, scale float64) []point {
	if t.empty() {
		return nil
	}
	out := make([]point, 0, len(t.starts))
	for _, k := range t.starts {
		mid := k + (t.ends[k]-k)/2
		out = append(out, point{float64(mid-zero) / 1e9, t.vals[k] * scale})
	}
	return out
}

// cumulative turns per-slice totals into a running sum.
func cumulative(ps []point) []point {
	out := make([]point, len(ps))
	var s float64
	for i, p := range ps {
		s += p.y
		out[i] = point{p.x, s}
	}
	return out
}

// ratioOf divides two timelines slice by slice (slices where the
// denominator is 0 or missing are skipped), × scale.
func ratioOf(num, den *timeline, zero int64, scale float64) []point {
	if num.empty() || den.empty() {
		return nil
	}
	var out []point
	for _, k := range den.starts {
		d := den.vals[k]
		nv, ok := num.vals[k]
		if !ok || !(d > 0) {
			continue
		}
		mid := k + (den.ends[k]-k)/2
		out = append(out, point{float64(mid-zero) / 1e9, nv / d * scale})
	}
	return out
}

// sumOf adds timelines slice by slice (a missing slice counts as 0).
func sumOf(ts ...*timeline) *timeline {
	out := &timeline{ends: map[int64]int64{}, vals: map[int64]float64{}}
	for _, t := range ts {
		if t.empty() {
			continue
		}
		for _, k := range t.starts {
			if _, seen := out.vals[k]; !seen {
				out.starts = append(out.starts, k)
				out.ends[k] = t.ends[k]
			}
			out.vals[k] += t.vals[k]
		}
	}
	sort.Slice(out.starts, func(i, j int) bool { return out.starts[i] < out.starts[j] })
	if len(out.starts) == 0 {
		return nil
	}
	return out
}

// rollingMean is the trailing mean over a window of w points.
func rollingMean(ps []point, w int) []point {
	if w < 1 {
		w = 1
	}
	out := make([]point, len(ps))
	var s float64
	for i, p := range ps {
		s += p.y
		if i >= w {
			s -= ps[i-w].y
		}
		n := min(i+1, w)
		out[i] = point{p.x, s / float64(n)}
	}
	return out
}

// runningMean is the mean of all points so far.
func runningMean(ps []point) []point {
	out := make([]point, len(ps))
	var s float64
	for i, p := range ps {
		s += p.y
		out[i] = point{p.x, s / float64(i+1)}
	}
	return out
}

// zeroOf returns the plots' time zero: the earliest first_update_ns of the
// export, else the earliest request start, else 0.
func zeroOf(in *Input) int64 {
	var z int64
	if in.Server != nil {
		for _, info := range in.Server.Summary.EndpointInfo {
			if info != nil && info.FirstUpdateNs > 0 && (z == 0 || info.FirstUpdateNs < z) {
				z = info.FirstUpdateNs
			}
		}
	}
	if z != 0 {
		return z
	}
	for i := range in.Requests {
		if s := in.Requests[i].StartNs; s > 0 && (z == 0 || s < z) {
			z = s
		}
	}
	return z
}

// nominal is the usual slice length of t: the median of its slice lengths.
func (t *timeline) nominal() int64 {
	if t.empty() {
		return 0
	}
	ds := make([]int64, 0, len(t.starts))
	for _, k := range t.starts {
		ds = append(ds, t.ends[k]-k)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// partialShare is the length, as a share of the nominal one, below which a
// slice counts as partial (the last slice of a run is usually cut short).
const partialShare = 0.95

// ratePoints projects a per-second timeline like points, but a partial
// slice's rate is weighted by its length (rate × length / nominal length):
// a rate measured over 0.03 s is no spike next to 1 s slices. The partial
// slices are also returned apart, to be marked.
func (t *timeline) ratePoints(zero int64, scale float64) (pts, partial []point) {
	if t.empty() {
		return nil, nil
	}
	nom := t.nominal()
	for _, k := range t.starts {
		d := t.ends[k] - k
		mid := k + d/2
		v := t.vals[k] * scale
		p := point{float64(mid-zero) / 1e9, v}
		if nom > 0 && float64(d) < partialShare*float64(nom) {
			p.y = v * float64(d) / float64(nom)
			partial = append(partial, p)
		}
		pts = append(pts, p)
	}
	return pts, partial
}

// sumRatePoints is ratePoints of the slice-by-slice sum of ts.
func sumRatePoints(zero int64, scale float64, ts ...*timeline) (pts, partial []point) {
	return sumOf(ts...).ratePoints(zero, scale)
}

// segments splits points (sorted by x) into runs of the same phase, so that
// a line is never drawn across the gap between warmup and profiling.
func segments(ps []point, phase []string) [][]point {
	var out [][]point
	start := 0
	for i := 1; i <= len(ps); i++ {
		if i == len(ps) || phase[i] != phase[start] {
			out = append(out, ps[start:i])
			start = i
		}
	}
	return out
}
