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
	// Errors counts the profiling records with an error, not cancelled;
	// Cancelled the cancelled ones (left out of every figure).
	Errors, Cancelled int
	// Lateness holds, per profiling record that has both times, how late
	// the client sent it: request_start_ns − credit_issued_ns, in ms.
	Lateness []float64
	// Duration is the summed benchmark_duration of the runs, seconds.
	Duration float64
	// Dirs are the folders read.
	Dirs []string
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
			if rec.Bucket != metrics.BucketProfilingOK {
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
	// Observed is the run's figure in the term's unit; NaN when the run
	// has no value for it (Missing).
	Observed float64
	Met      bool
	Missing  bool
}

// Result is an objective judged on a run.
type Result struct {
	Terms []TermResult
	// Met is true when every term holds.
	Met bool
	// Requests is the number of successful profiling requests; Good those
	// that met every per-request term; Goodput is Good per second and
	// Throughput Requests per second of benchmark.
	Requests, Good, Errors int
	Goodput, Throughput    float64
}

// Failed lists the terms that do not hold, as "ttft.p99=2.4s>2s"-like
// text, for logs.
func (res *Result) Failed() []string {
	var out []string
	for _, t := range res.Terms {
		if t.Met {
			continue
		}
		if t.Missing {
			out = append(out, t.Name()+": no value in the run")
			continue
		}
		out = append(out, fmt.Sprintf("%s=%s (want %s%s)", t.Name(), formatValue(t.Observed, t.Unit), t.Op, formatValue(t.Threshold, t.Unit)))
	}
	return out
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

// Evaluate judges the objective on r. A term whose figure the run lacks
// (no records with that metric, no benchmark time for a rate) does not
// hold.
func (s SLO) Evaluate(r *Run) Result {
	res := Result{Requests: r.Requests(), Errors: r.Errors, Met: true}
	for _, t := range s.Terms {
		tr := TermResult{Term: t, Observed: s.observe(&t, r)}
		tr.Missing = math.IsNaN(tr.Observed)
		tr.Met = !tr.Missing && t.Op.holds(tr.Observed, t.Threshold)
		res.Met = res.Met && tr.Met
		res.Terms = append(res.Terms, tr)
	}
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
	vals := make([]float64, 0, len(r.Values))
	for _, v := range r.Values {
		if x := v[t.metric]; !math.IsNaN(x) {
			vals = append(vals, x)
		}
	}
	if len(vals) == 0 {
		return math.NaN()
	}
	st := metrics.NewStat(t.Unit, vals)
	switch t.Stat {
	case "avg":
		return st.Avg
	case "min":
		return st.Min
	case "max":
		return st.Max
	case "std":
		return st.Std
	}
	var p float64
	fmt.Sscanf(t.Stat, "p%g", &p)
	return metrics.Percentile(vals, p) // NewStat sorted vals
}
