package metrics

import (
	"errors"
	"fmt"
	"time"
)

// RunInfo is what the caller knows about the run that records alone do not
// tell: identity, windows, configuration, validity and request accounting.
// Finish and Report write it into profile_export_aiperf.json.
type RunInfo struct {
	BenchmarkID string
	Scenario    string
	// StartTime and EndTime bound the whole run; ProfilingStart and
	// ProfilingEnd the profiling phase (start_time/end_time in the export,
	// falling back to StartTime/EndTime when zero).
	StartTime, EndTime           time.Time
	ProfilingStart, ProfilingEnd time.Time
	// InputConfig is the resolved configuration (only explicitly set
	// fields). The caller redacts it; Finish redacts again every key that
	// names a secret (see redact).
	InputConfig map[string]any
	// Dataset is the corpus identity copied to metadata.dataset
	// (source_type, loader, hf_dataset_name, hf_split, …).
	Dataset  map[string]any
	Validity struct {
		Valid   bool
		Reasons []string
	}
	Cancelled               bool
	Accounting              Accounting
	Concurrency             int
	SkippedSubagentRequests int
	// Coverage is metadata.metric_duration_coverage: how far into the
	// profiling phase TTFT and ITL observations reached (written with a
	// scenario, when set).
	Coverage []PhaseCoverage
	// Extra holds agentperf-specific facts written under
	// metadata.agentperf (sorted by key).
	Extra map[string]any
	// Warnings are the caller's warnings about the run (a plot that did
	// not render, a failed scrape …), written to metadata.warnings and kept
	// by Report. AddWarnings appends to them after Finish.
	Warnings []string

	// keepTop and keepMeta hold the top-level and metadata keys of an
	// existing aggregate JSON that Recompute does not regenerate (written
	// back unchanged, after the regenerated ones).
	keepTop, keepMeta map[string]any
	// prevAccounting and prevAddsUp are the request_accounting of the
	// aggregate Report read the context from (what it would replace).
	prevAccounting Accounting
	prevAddsUp     bool
}

// profilingWindow returns the profiling window, falling back to the run's.
func (ri *RunInfo) profilingWindow() (time.Time, time.Time) {
	s, e := ri.ProfilingStart, ri.ProfilingEnd
	if s.IsZero() {
		s = ri.StartTime
	}
	if e.IsZero() {
		e = ri.EndTime
	}
	return s, e
}

// Accounting says where every request that was sent ended up. Every
// request is in exactly one bucket, so Sent equals the sum of the others:
// successful and failed requests of each phase (not cancelled), context
// overflows (any phase; written to context_overflow_export.jsonl only) and
// cancelled requests (any phase).
type Accounting struct {
	Sent            int
	ProfilingOK     int
	ProfilingErrors int
	WarmupOK        int
	WarmupErrors    int
	Overflows       int
	Cancelled       int
}

// PhaseCoverage is one entry of metadata.metric_duration_coverage.
type PhaseCoverage struct {
	PhaseName               string
	ExpectedDurationSeconds float64
	RequiredRatio           float64
	TTFTRatio, ITLRatio     float64
	// ContentRatio is streaming_content_ratio: how far the last streamed
	// content reached.
	ContentRatio float64
}

// ErrAccounting is wrapped by Accounting.Check errors.
var ErrAccounting = errors.New("request accounting does not add up")

// Add adds b's counts to a's: every field is a count, and the
// accounting of two runs (or shards) is the sum of theirs.
func (a *Accounting) Add(b Accounting) {
	a.Sent += b.Sent
	a.ProfilingOK += b.ProfilingOK
	a.ProfilingErrors += b.ProfilingErrors
	a.WarmupOK += b.WarmupOK
	a.WarmupErrors += b.WarmupErrors
	a.Overflows += b.Overflows
	a.Cancelled += b.Cancelled
}

// Total returns the sum of every bucket but Sent.
func (a Accounting) Total() int {
	return a.ProfilingOK + a.ProfilingErrors + a.WarmupOK + a.WarmupErrors + a.Overflows + a.Cancelled
}

// Equation is the accounting as the sum it is: "sent 7 = profiling 4 ok
// + 1 failed, warmup 2 ok + 0 failed, 0 context overflows, 0 cancelled".
func (a Accounting) Equation() string {
	return fmt.Sprintf("sent %d = profiling %d ok + %d failed, warmup %d ok + %d failed, %d context overflows, %d cancelled",
		a.Sent, a.ProfilingOK, a.ProfilingErrors, a.WarmupOK, a.WarmupErrors, a.Overflows, a.Cancelled)
}

// Check reports whether the accounting adds up and, when it does not,
// which number is off: a negative bucket, or Sent against the sum of the
// buckets (with the difference).
func (a Accounting) Check() error {
	for _, f := range []struct {
		name string
		n    int
	}{
		{"sent", a.Sent}, {"profiling_ok", a.ProfilingOK}, {"profiling_errors", a.ProfilingErrors},
		{"warmup_ok", a.WarmupOK}, {"warmup_errors", a.WarmupErrors},
		{"context_overflows", a.Overflows}, {"cancelled", a.Cancelled},
	} {
		if f.n < 0 {
			return fmt.Errorf("%w: %s is negative (%d)", ErrAccounting, f.name, f.n)
		}
	}
	if t := a.Total(); t != a.Sent {
		what := "requests are missing from the records (sent but never recorded)"
		if t > a.Sent {
			what = "more requests were recorded than sent"
		}
		return fmt.Errorf("%w: sent %d but profiling_ok %d + profiling_errors %d + warmup_ok %d + warmup_errors %d + context_overflows %d + cancelled %d = %d: %d %s",
			ErrAccounting, a.Sent, a.ProfilingOK, a.ProfilingErrors, a.WarmupOK, a.WarmupErrors, a.Overflows, a.Cancelled, t, abs(a.Sent-t), what)
	}
	return nil
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
