package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentperf/agentperf/internal/atomicfile"
	"github.com/agentperf/agentperf/metrics"
)

// MaxProfileRuns bounds RepeatOptions.Runs, as aiperf bounds
// --num-profile-runs.
const MaxProfileRuns = 10

// Where a repeated run writes (aiperf's layout for --num-profile-runs):
// metrics owns the layout and the pooled summary's codec.
const (
	DirProfileRuns    = metrics.DirProfileRuns
	DirPooled         = metrics.DirPooled
	FilePooledSummary = metrics.FilePooledSummary
)

// RepeatOptions configure RunRepeated.
type RepeatOptions struct {
	// Runs is the number of profile runs (--num-profile-runs), 2 to
	// MaxProfileRuns.
	Runs int
	// Cooldown is the pause between runs (--profile-run-cooldown-seconds).
	Cooldown time.Duration
	// Confidence is the confidence level of the intervals
	// (--confidence-level); 0 means 0.95.
	Confidence float64
	// ConvergenceMetric, when set ("time_to_first_token.p50": a headline
	// metric's name, see HeadlineMetrics), stops the runs early once, from
	// the third run on, its interval's relative width (high − low) / |mean|
	// is at most ConvergenceThreshold.
	ConvergenceMetric    string
	ConvergenceThreshold float64
}

// Headline is one headline metric: a statistic of one aggregate stat.
type Headline struct {
	Tag, Stat, Unit string
}

// Name is "tag.stat" ("time_to_first_token.p50").
func (h Headline) Name() string { return h.Tag + "." + h.Stat }

// HeadlineMetrics are the figures pooled over the runs.
var HeadlineMetrics = []Headline{
	{"request_throughput", "avg", "requests/sec"},
	{"output_token_throughput", "avg", "tokens/sec"},
	{"time_to_first_token", "p50", "ms"}, {"time_to_first_token", "p99", "ms"},
	{"inter_token_latency", "p50", "ms"}, {"inter_token_latency", "p99", "ms"},
	{"request_latency", "p50", "ms"}, {"request_latency", "p99", "ms"},
}

// Pooled is one headline metric over the runs (metrics.Pooled).
type Pooled = metrics.Pooled

// Pool computes the pooled figures of values, one per run
// (metrics.Pool).
func Pool(values []float64, level float64, unit string) Pooled {
	return metrics.Pool(values, level, unit)
}

// PooledSummary is the pooled summary of a repeated run
// (metrics.PooledSummary).
type PooledSummary = metrics.PooledSummary

// RepeatOutcome is what RunRepeated did.
type RepeatOutcome struct {
	// Runs are the runs' outcomes, in order.
	Runs []*Outcome
	// Summary is the pooled summary, also written to
	// Dir/aggregate/profile_export_aiperf_aggregate.json.
	Summary PooledSummary
	// Dir is the base folder (Spec.OutputDir).
	Dir string
}

// ExitCode is the worst exit code of the runs (interrupted first).
func (o *RepeatOutcome) ExitCode() int {
	code := ExitOK
	for _, r := range o.Runs {
		switch c := r.ExitCode(); {
		case c == ExitInterrupted:
			return c
		case c != ExitOK:
			code = c
		}
	}
	return code
}

// repeatFlags are the flags of the options besides the number of runs.
var repeatFlags = []string{"profile-run-cooldown-seconds", "confidence-level", "convergence-metric", "convergence-threshold"}

// CheckFlags checks the options as a CLI's flags give them (Runs 1: no
// repeat), before anything runs: Runs within 1 to MaxProfileRuns, and no
// flag of the other options given (given(flag)) without a repeat. The
// errors name the flags (aiperf's).
func (o RepeatOptions) CheckFlags(given func(flag string) bool) error {
	if o.Runs < 1 || o.Runs > MaxProfileRuns {
		return fmt.Errorf("--num-profile-runs %d: want 1 to %d", o.Runs, MaxProfileRuns)
	}
	if o.Runs == 1 {
		for _, f := range repeatFlags {
			if given(f) {
				return fmt.Errorf("--%s applies to --num-profile-runs 2 or more (got 1)", f)
			}
		}
	}
	return nil
}

// normalize checks o and sets its defaults (Confidence 0.95); an error is
// an *InputError naming the field.
func (o *RepeatOptions) normalize() error {
	if o.Runs < 2 || o.Runs > MaxProfileRuns {
		return inputErr(fmt.Errorf("RepeatOptions.Runs %d: want 2 to %d profile runs", o.Runs, MaxProfileRuns))
	}
	if o.Confidence == 0 {
		o.Confidence = 0.95
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return inputErr(fmt.Errorf("RepeatOptions.Confidence %v: want a level between 0 and 1, e.g. 0.95", o.Confidence))
	}
	if o.ConvergenceMetric != "" {
		if !slices.ContainsFunc(HeadlineMetrics, func(h Headline) bool { return h.Name() == o.ConvergenceMetric }) {
			var names []string
			for _, h := range HeadlineMetrics {
				names = append(names, h.Name())
			}
			return inputErr(fmt.Errorf("RepeatOptions.ConvergenceMetric %q: want one of %v", o.ConvergenceMetric, names))
		}
		if !(o.ConvergenceThreshold > 0) {
			return inputErr(fmt.Errorf("RepeatOptions.ConvergenceThreshold %v: want a positive relative interval width, e.g. 0.05", o.ConvergenceThreshold))
		}
	}
	return nil
}

// RunRepeated runs the profiling of s o.Runs times (aiperf's
// --num-profile-runs), each run into Spec.OutputDir/profile_runs/run_000K
// with every artifact of a run, against one server: the corpus is loaded
// once, an in-process simulator is started once, the seed is the same in
// every run (the Spec's), and nothing is reset between runs (aiperf resets
// no cache either; Cooldown pauses). Each run replays its warmup
// (docs/repeated-runs.md says why aiperf's skipping of it after the first
// run is not followed). It writes the pooled summary with an interval per
// headline metric and stops early when ConvergenceMetric converges or a
// run fails or is interrupted.
func RunRepeated(ctx context.Context, s Spec, o RepeatOptions) (*RepeatOutcome, error) {
	if err := o.normalize(); err != nil {
		return nil, err
	}
	if s.Replay.Shard.Sharded() {
		return nil, inputErr(fmt.Errorf("repeated profile runs of a sharded run are not supported: repeat the sharded run instead"))
	}
	if err := s.Validate(); err != nil {
		return nil, inputErr(err)
	}
	// One corpus and one simulator for every run.
	if s.Loaded == nil {
		l, err := Load(ctx, s)
		if err != nil {
			return nil, err
		}
		defer l.Close()
		s.Loaded = l
	}
	srv, _, err := s.startSimulator(s.Loaded, true)
	if err != nil {
		return nil, err
	}
	if srv != nil {
		defer srv.Close()
	}
	out := &RepeatOutcome{Dir: s.OutputDir, Summary: PooledSummary{SchemaVersion: 1, RunsRequested: o.Runs, Confidence: o.Confidence,
		Warmup:  "every run replays its warmup (the lanes' start states); one server for all runs, its caches not reset between them; the same seed in every run",
		Metrics: map[string]Pooled{}}}
	values, err := out.runAll(ctx, s, o)
	if err != nil {
		return out, err
	}
	return out, out.writePooled(values, o)
}

// runAll runs the profile runs in order, pausing o.Cooldown between
// them, until o.Runs are done or one says to stop (stopAfter), and
// returns each headline metric's values, one per run that has it.
func (out *RepeatOutcome) runAll(ctx context.Context, s Spec, o RepeatOptions) (map[string][]float64, error) {
	values := map[string][]float64{}
	for k := 1; k <= o.Runs; k++ {
		if k > 1 && o.Cooldown > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(o.Cooldown):
			}
		}
		if ctx.Err() != nil {
			out.Summary.StoppedEarly = "interrupted"
			break
		}
		r, err := out.runOne(ctx, s, o, k, values)
		if err != nil {
			return values, err
		}
		if stop, why := stopAfter(o, k, r, values); stop {
			if why != "" {
				out.Summary.StoppedEarly = why
			}
			break
		}
	}
	return values, nil
}

// runOne runs profile run k of s into its folder under s.OutputDir,
// records it in out and adds its headline figures to values.
func (out *RepeatOutcome) runOne(ctx context.Context, s Spec, o RepeatOptions, k int, values map[string][]float64) (*Outcome, error) {
	rs := s
	rel := filepath.Join(DirProfileRuns, fmt.Sprintf("run_%04d", k))
	rs.OutputDir = filepath.Join(s.OutputDir, rel)
	if s.Log != nil {
		fmt.Fprintf(s.Log, "profile run %d of %d → %s\n", k, o.Runs, rs.OutputDir)
	}
	r, err := Run(ctx, rs)
	if err != nil {
		return nil, err
	}
	out.Runs = append(out.Runs, r)
	out.Summary.Runs = append(out.Summary.Runs, rel)
	agg, err := metrics.ReadAggregateFile(rs.OutputDir)
	if err != nil {
		return nil, fmt.Errorf("profile run %d: %w", k, err)
	}
	for _, h := range HeadlineMetrics {
		if v, ok := agg.Value(h.Tag, h.Stat); ok {
			values[h.Name()] = append(values[h.Name()], v)
		}
	}
	return r, nil
}

// stopAfter says whether the runs stop after run k (outcome r), and why
// when that is early: the run failed or was interrupted, or, from the
// third run on, o.ConvergenceMetric converged.
func stopAfter(o RepeatOptions, k int, r *Outcome, values map[string][]float64) (bool, string) {
	if r.ExitCode() != ExitOK {
		if k < o.Runs {
			return true, fmt.Sprintf("run %d failed or was interrupted (exit code %d)", k, r.ExitCode())
		}
		return true, ""
	}
	if m := o.ConvergenceMetric; m != "" && k >= 3 && k < o.Runs {
		if h := headline(m); len(values[m]) == k {
			if p := Pool(values[m], o.Confidence, h.Unit); p.RelWidth <= o.ConvergenceThreshold {
				return true, fmt.Sprintf("converged after %d runs: %s's %.0f%% interval is %.2f%% of its mean wide (threshold %.2f%%)",
					k, m, 100*o.Confidence, 100*p.RelWidth, 100*o.ConvergenceThreshold)
			}
		}
	}
	return false, ""
}

// writePooled pools each headline metric's values and writes the pooled
// summary to Dir/aggregate/profile_export_aiperf_aggregate.json.
func (out *RepeatOutcome) writePooled(values map[string][]float64, o RepeatOptions) error {
	out.Summary.RunsDone = len(out.Runs)
	for _, h := range HeadlineMetrics {
		if v := values[h.Name()]; len(v) > 0 {
			out.Summary.Metrics[h.Name()] = Pool(v, o.Confidence, h.Unit)
		}
	}
	b, err := metrics.EncodePooledSummary(out.Summary)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(out.Dir, DirPooled), 0o755); err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(filepath.Join(out.Dir, DirPooled, FilePooledSummary), b); err != nil {
		return fmt.Errorf("write the pooled summary: %w", err)
	}
	return nil
}

func headline(name string) Headline {
	for _, h := range HeadlineMetrics {
		if h.Name() == name {
			return h
		}
	}
	return Headline{}
}

// WriteSummary prints the pooled summary: per headline metric, each run's
// value, the mean and its interval.
func (o *RepeatOutcome) WriteSummary(w io.Writer) {
	s := &o.Summary
	fmt.Fprintf(w, "pooled over %d profile runs (%s; %.0f%% confidence intervals of the mean over runs, Student t):\n", s.RunsDone, o.Dir, 100*s.Confidence)
	if s.StoppedEarly != "" {
		fmt.Fprintf(w, "  stopped early: %s\n", s.StoppedEarly)
	}
	fmt.Fprintf(w, "  %-28s %-14s %12s %26s %8s  %s\n", "metric", "unit", "mean", "interval", "cv", "per run")
	for _, h := range HeadlineMetrics {
		p, ok := s.Metrics[h.Name()]
		if !ok {
			continue
		}
		per := ""
		for i, v := range p.Values {
			if i > 0 {
				per += ", "
			}
			per += fmt.Sprintf("%.4g", v)
		}
		fmt.Fprintf(w, "  %-28s %-14s %12.4g %26s %7.2f%%  %s\n", h.Name(), p.Unit, p.Mean, fmt.Sprintf("[%.4g, %.4g]", p.CILow, p.CIHigh), 100*p.CV, per)
	}
	fmt.Fprintf(w, "pooled summary: %s\n", filepath.Join(o.Dir, DirPooled, FilePooledSummary))
}
