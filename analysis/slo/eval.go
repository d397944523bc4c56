package slo

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentperf/agentperf/metrics"
)

// ErrBadRun is wrapped by errors about an artifact folder that cannot be
// read.
var ErrBadRun = errors.New("unreadable run")

// Run is what Evaluate needs of one or more runs (repeats of one
// measurement), pooled: every successful profiling record's metric
// values, the error and request counts, and the benchmark time.
type Run struct {
	// Values holds, per successful profiling record, its value of every
	// metric in metrics.Metrics order (NaN when absent).
	Values [][]float64
	// Errors counts the profiling records that failed
	// (metrics.BucketProfilingError); Cancelled the cancelled ones and
	// Overflows the context overflows (metrics.BucketCancelled,
	// BucketOverflow), left out of every figure, as the failed-request
	// threshold leaves them out.
	Errors, Cancelled, Overflows int
	// Lateness holds, per profiling record that has both times, how late
	// the client sent it: request_start_ns − credit_issued_ns, in ms.
	Lateness []float64
	// Duration is the summed benchmark_duration of the runs, seconds.
	Duration float64
	// Dirs are the folders read.
	Dirs []string
	// Aborted is the abort reason of the first run that was aborted
	// (metadata.agentperf.aborted: warmup_failed, a failed-request
	// threshold, …) and AbortMessage its message; "" when every run ran
	// its course. An aborted run did not measure what it was meant to.
	Aborted, AbortMessage, AbortedDir string
}

// Requests is the number of successful profiling records.
func (r *Run) Requests() int { return len(r.Values) }

// Load reads the artifact folders of one measurement (its repeats) and
// pools them. Each must hold profile_export.jsonl and
// profile_export_aiperf.json (for benchmark_duration).
func Load(dirs ...string) (*Run, error) {
	r := &Run{Dirs: dirs}
	for _, dir := range dirs {
		agg, err := metrics.ReadAggregateFile(dir)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadRun, err)
		}
		if a, _ := agg.Metadata.Agentperf["aborted"].(string); a != "" && r.Aborted == "" {
			r.Aborted, r.AbortedDir = a, dir
			r.AbortMessage, _ = agg.Metadata.Agentperf["abort_message"].(string)
		}
		if st, ok := agg.Stat("benchmark_duration"); ok {
			if d, ok := st.Avg.Float(); ok {
				r.Duration += d
			}
		}
		name := filepath.Join(dir, metrics.FileRecords)
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %v (a run with --export-level summary has no records to judge)", ErrBadRun, err)
		}
		_, err = metrics.ReadRecords(f, name, false, func(l *metrics.RecordLine) error {
			rec := &l.Record
			if rec.Phase != metrics.PhaseProfiling {
				return nil
			}
			if rec.Bucket == metrics.BucketCancelled {
				r.Cancelled++
				return nil
			}
			if rec.CreditIssuedNs > 0 && rec.RequestStartNs > 0 {
				r.Lateness = append(r.Lateness, float64(rec.RequestStartNs-rec.CreditIssuedNs)/1e6)
			}
			switch rec.Bucket {
			case metrics.BucketOverflow:
				// The tally's rule: a context overflow is neither a
				// success nor a failure.
				r.Overflows++
				return nil
			case metrics.BucketProfilingError:
				r.Errors++
				return nil
			}
			v := make([]float64, len(metrics.Metrics))
			for i := range metrics.Metrics {
				v[i] = metrics.Metrics[i].Get(&l.Values)
			}
			r.Values = append(r.Values, v)
			return nil
		})
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadRun, err)
		}
	}
	return r, nil
}

// TermResult is one term judged.
type TermResult struct {
	Term
	// Observed is the run's figure in the term's unit, with every failed
	// request counted as a value worse than any threshold (FailedWorst):
	// +Inf or -Inf when the failed requests decide it, NaN when the run
	// has no sample at all (Missing).
	Observed float64
	// Samples is the number of values the figure was taken over: the
	// successful requests that have the metric plus the failed requests
	// (Failed of them). MinSamples is how many the statistic needs
	// (MinSamples); TooFew is Samples < MinSamples.
	Samples, Failed, MinSamples int
	TooFew                      bool
	// Judged is true when the term's verdict stands: it had enough
	// samples, or the failed requests alone decide that it does not hold
	// (padded to MinSamples with requests that meet it, the figure still
	// misses). A term that is not Judged is neither met nor failed.
	Judged bool
	// Met is true when the term holds (never when it is not Judged).
	Met     bool
	Missing bool
}

// Result is an objective judged on a run.
type Result struct {
	Terms []TermResult
	// Met is true when every term holds.
	Met bool
	// Undecided is true when the objective is not met only because of
	// terms that had too few samples to be judged (no judged term
	// failed): the run was too short to say.
	Undecided bool
	// Requests is the number of successful profiling requests; Good those
	// that met every per-request term; Goodput is Good per second and
	// Throughput Requests per second of benchmark.
	Requests, Good, Errors int
	Goodput, Throughput    float64
}

// Failed lists the terms that do not hold, as "ttft.p99=2.4s>2s"-like
// text, for logs; a term without enough samples says so.
func (res *Result) Failed() []string {
	var out []string
	for _, t := range res.Terms {
		if t.Met {
			continue
		}
		var s string
		switch {
		case t.Missing:
			s = t.Name() + ": no value in the run"
		case math.IsInf(t.Observed, 0):
			s = fmt.Sprintf("%s: decided by failed requests (%d of %d samples failed; a failed request counts as missing every objective)", t.Name(), t.Failed, t.Samples)
		default:
			s = fmt.Sprintf("%s=%s (want %s%s)", t.Name(), formatValue(t.Observed, t.Unit), t.Op, formatValue(t.Threshold, t.Unit))
		}
		switch {
		case t.TooFew && t.Judged:
			s += fmt.Sprintf(" [%d samples, fewer than the %d %s needs, but the failed requests decide it]", t.Samples, t.MinSamples, t.statName())
		case t.TooFew:
			s += fmt.Sprintf(" [not judged: %d samples, %s needs at least %d: probe longer]", t.Samples, t.statName(), t.MinSamples)
		}
		out = append(out, s)
	}
	return out
}

func (t *Term) statName() string {
	if t.Stat == "" {
		return t.Metric
	}
	return "a " + t.Stat
}

// MinSamples is the number of values a statistic needs to be judged. A
// percentile pN needs ⌈100 / min(N, 100−N)⌉: so many that at least one
// value lies beyond it, and the figure is a measured request of the tail
// rather than an interpolation between the most extreme ones (p99 and p1
// need 100, p95 and p5 20, p90 and p10 10, p75 and p25 4, p50 2). std
// needs 2; avg, min and max, and the run figures, 1.
func MinSamples(stat string) int {
	switch stat {
	case "", "avg", "min", "max":
		return 1
	case "std":
		return 2
	}
	var p float64
	if _, err := fmt.Sscanf(stat, "p%g", &p); err != nil || p <= 0 || p >= 100 {
		return 1
	}
	return int(math.Ceil(100/min(p, 100-p) - 1e-9))
}

func formatValue(v float64, unit string) string {
	switch unit {
	case "ms":
		if math.Abs(v) >= 1000 {
			return fmt.Sprintf("%.3gs", v/1000)
		}
		return fmt.Sprintf("%.3gms", v)
	case "%":
		return fmt.Sprintf("%.3g%%", v)
	}
	return fmt.Sprintf("%.4g %s", v, unit)
}

// Evaluate judges the objective on r. Every failed profiling request
// counts against every term: as a value worse than any threshold of a
// per-request term (+Inf under <= and <, -Inf under >= and >), in the
// error share, and as a request that adds nothing to a throughput. A
// term needs MinSamples values to be judged (see TermResult.Judged); a
// term whose figure the run lacks does not hold.
func (s SLO) Evaluate(r *Run) Result {
	res := Result{Requests: r.Requests(), Errors: r.Errors, Met: true}
	failedJudged := false
	for _, t := range s.Terms {
		tr := s.judge(&t, r)
		res.Met = res.Met && tr.Met
		failedJudged = failedJudged || (tr.Judged && !tr.Met)
		res.Terms = append(res.Terms, tr)
	}
	res.Undecided = !res.Met && !failedJudged
	for _, v := range r.Values {
		if s.goodRequest(v) {
			res.Good++
		}
	}
	if r.Duration > 0 {
		res.Goodput = float64(res.Good) / r.Duration
		res.Throughput = float64(res.Requests) / r.Duration
	}
	return res
}

// judge computes the term's figure on r and its verdict.
func (s SLO) judge(t *Term, r *Run) TermResult {
	tr := TermResult{Term: *t, MinSamples: MinSamples(t.Stat), Failed: r.Errors}
	if t.kind != kindRecord {
		tr.Samples = r.Requests() + r.Errors
		tr.Observed = s.observe(t, r)
	} else {
		worst := math.Inf(1)
		if t.Op == GE || t.Op == GT {
			worst = math.Inf(-1)
		}
		vals := make([]float64, 0, len(r.Values)+r.Errors)
		for _, v := range r.Values {
			if x := v[t.metric]; !math.IsNaN(x) {
				vals = append(vals, x)
			}
		}
		for range r.Errors {
			vals = append(vals, worst)
		}
		slices.Sort(vals)
		tr.Samples = len(vals)
		tr.Observed = statOf(t.Stat, vals, worst)
		if len(vals) < tr.MinSamples {
			// Padded to the minimum with values that meet the term: if the
			// figure still misses, the failed requests decide it.
			pad := slices.Clone(vals)
			for range tr.MinSamples - len(vals) {
				pad = append(pad, -worst)
			}
			slices.Sort(pad)
			if p := statOf(t.Stat, pad, worst); r.Errors > 0 && !math.IsNaN(p) && !t.Op.holds(p, t.Threshold) {
				tr.Judged = true
			}
		}
	}
	tr.Missing = tr.Samples == 0 || math.IsNaN(tr.Observed)
	tr.TooFew = tr.Samples < tr.MinSamples
	if !tr.TooFew {
		tr.Judged = true
		tr.Met = !tr.Missing && t.Op.holds(tr.Observed, t.Threshold)
	}
	return tr
}

// statOf is the statistic of sorted values, some of which may be
// infinite (failed requests): a percentile interpolates as numpy does
// and is infinite when an infinite neighbour has weight; std is worst
// when any value is infinite. NaN when there is no value.
func statOf(stat string, sorted []float64, worst float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	switch stat {
	case "avg":
		var sum float64
		for _, x := range sorted {
			sum += x
		}
		return sum / float64(n)
	case "min":
		return sorted[0]
	case "max":
		return sorted[n-1]
	case "std":
		if math.IsInf(sorted[0], 0) || math.IsInf(sorted[n-1], 0) {
			if math.IsInf(sorted[0], 0) && math.IsInf(sorted[n-1], 0) && sorted[0] != sorted[n-1] {
				return math.NaN()
			}
			return worst
		}
		return metrics.NewStat("", slices.Clone(sorted)).Std
	}
	var p float64
	fmt.Sscanf(stat, "p%g", &p)
	if !math.IsInf(sorted[0], 0) && !math.IsInf(sorted[n-1], 0) {
		return metrics.Percentile(sorted, p)
	}
	rank := p / 100 * float64(n-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, n-1)
	frac := rank - float64(lo)
	a, b := sorted[lo], sorted[hi]
	switch {
	case frac == 0 || a == b:
		return a
	case math.IsInf(a, 0) && math.IsInf(b, 0):
		return math.NaN() // -Inf and +Inf: no figure
	case math.IsInf(a, 0):
		return a
	case math.IsInf(b, 0):
		return b
	}
	return metrics.Percentile(sorted[lo:hi+1], 100*frac)
}

// goodRequest reports whether one record meets every per-request term. A
// value the record lacks (the inter-token latency of a one-token answer)
// does not count against it.
func (s SLO) goodRequest(v []float64) bool {
	for _, t := range s.Terms {
		if t.kind != kindRecord {
			continue
		}
		if x := v[t.metric]; !math.IsNaN(x) && !t.Op.holds(x, t.Threshold) {
			return false
		}
	}
	return true
}

// observe computes the term's figure on r.
func (s SLO) observe(t *Term, r *Run) float64 {
	switch t.kind {
	case kindErrors:
		n := r.Requests() + r.Errors
		if n == 0 {
			return math.NaN()
		}
		return 100 * float64(r.Errors) / float64(n)
	case kindRate:
		if r.Duration <= 0 {
			return math.NaN()
		}
		var sum float64
		col := func(tag string) float64 {
			i := slices.IndexFunc(metrics.Metrics, func(m metrics.Metric) bool { return m.Tag == tag })
			var x float64
			for _, v := range r.Values {
				if !math.IsNaN(v[i]) {
					x += v[i]
				}
			}
			return x
		}
		switch t.Metric {
		case "request_throughput":
			sum = float64(r.Requests())
		case "output_token_throughput":
			sum = col("output_sequence_length")
		case "input_token_throughput":
			sum = col("input_sequence_length")
		case "total_token_throughput":
			sum = col("input_sequence_length") + col("output_sequence_length")
		}
		return sum / r.Duration
	}
	return math.NaN() // per-request terms: judge
}
