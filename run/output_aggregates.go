package run

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/agentperf/agentperf/metrics"
)

// aggregates closes the run's record streams (profile_export.jsonl,
// context_overflow_export.jsonl) and writes the aggregates
// (profile_export_aiperf.json/.csv, the timeslices) with the run's
// metadata and every warning found so far: the collector's Finish. A
// folder's are recomputed from its records (metrics.RecomputeWith), which
// never replaces an aggregate whose accounting adds up with a
// recomputation from a .partial record file unless forced.
type aggregates struct{}

func (aggregates) Stage() Stage { return StageAggregates }

func (aggregates) Write(f *Finishing) {
	if f.Folder() {
		recomputeAggregates(f)
		return
	}
	sum, err := f.Input.Collector.Finish(f.Info)
	f.Summary, f.Outcome.Summary = sum, sum
	if err != nil {
		f.WriteProblem("the request exports", err)
	}
}

func recomputeAggregates(f *Finishing) {
	opt := f.folder
	sum, err := metrics.RecomputeWith(f.Dir, opt.Table, metrics.RecomputeOptions{Force: opt.Force})
	f.Summary, f.Outcome.Summary = sum, sum
	f.keptAggregate = errors.Is(err, metrics.ErrAggregateKept)
	switch {
	case err == nil:
	case f.keptAggregate, errors.Is(err, metrics.ErrAccounting):
		f.Problem(ProblemRecount, "", err.Error(), err)
	case errors.Is(err, metrics.ErrBadExport), errors.Is(err, fs.ErrNotExist):
		f.Fail(&InputError{Err: err}) // not an artifact folder, or a malformed record file
	default:
		f.Fail(fmt.Errorf("report %s: %w", f.Dir, err))
	}
}
