package run

import (
	"fmt"
	"io"
	"slices"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/plot"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
)

// Stage is a step of the finishing pipeline (docs/ARCHITECTURE.md,
// "Finishing"). Finishing runs the stages in this order; an Output runs
// in its Stage, after the outputs registered before it.
type Stage int

const (
	// StageMeasure: outputs whose figures the aggregates' metadata
	// reports (the server metrics export: its derived figures).
	StageMeasure Stage = iota
	// StageFigure: outputs drawn before the aggregates, so that their
	// warnings are in them (the plot, and the figure input report.html
	// shows). The run's verdict and metadata are known from here on.
	StageFigure
	// StageAggregates: the records and the aggregates (the collector's
	// Finish, or a folder's recomputation). Warnings found after this
	// stage are late (Outcome.LateWarnings).
	StageAggregates
	// StageAmend: outputs that add to the written aggregates (the GPU
	// telemetry export). Deferred outputs run after this stage.
	StageAmend
	// StagePublish: outputs that read the written aggregates (the
	// warm-cache check, report.html).
	StagePublish
	// StageSeal: outputs written last, once the run's problems are known
	// (a shard's manifest).
	StageSeal
)

// An Output is one artifact (or check) of a finished run, registered on
// the finishing pipeline: Finish (profile, merge) and Recompute (agentperf
// report) run every registered Output in its Stage. Adding an artifact is
// its own file (a type with these two methods) and one line in outputs
// below; an embedder registers its own through Input.Outputs.
type Output interface {
	// Stage is when the output runs.
	Stage() Stage
	// Write writes the output. It reports through the Finishing (Warn,
	// WriteProblem, Fail), never by panicking, and must leave the other
	// outputs' files alone.
	Write(f *Finishing)
}

// A deferrer is an Output that runs after the aggregates, rather than in
// its Stage, when Defer says so (a run whose disk filled up, or that a
// scheduler's SIGTERM gives seconds to finish, writes its aggregates
// first).
type deferrer interface {
	Defer(f *Finishing) bool
}

// outputs are the built-in outputs, in the order they run within a stage.
// One line per artifact.
var outputs = []Output{
	serverExport{},  // server_metrics_export.{json,csv}: StageMeasure
	figure{},        // metrics_plots.png, and the figure report.html shows: StageFigure
	aggregates{},    // profile_export.jsonl, profile_export_aiperf.{json,csv}, timeslices: StageAggregates
	gpuExport{},     // gpu_telemetry_export.json, metadata.agentperf.gpu_telemetry: StageAmend
	warmCache{},     // the warm-cache warning in the aggregates: StagePublish
	reportHTML{},    // report.html: StagePublish
	shardManifest{}, // agentperf_shard.json of a shard: StageSeal
}

// Finishing is one finish in progress: what the outputs read, and where
// they report. A run's finish (Finish) has Result and Input; a folder's
// (Recompute) has neither, and its outputs read the folder's files.
type Finishing struct {
	// Dir is the artifact folder.
	Dir string
	// Result and Input are the run's (nil when finishing a folder).
	Result *replay.Result
	Input  *Input
	// Outcome is what the finish returns; outputs add to it.
	Outcome *Outcome
	// Info is the aggregates' run metadata, set before StageFigure (a
	// run's only).
	Info metrics.RunInfo
	// Summary is the aggregates as written, set by StageAggregates.
	Summary *metrics.Summary
	// Figure is the figure's input read by the figure output (a run's),
	// and FigureWarnings the warnings report.html shows about it.
	Figure         plot.Input
	FigureWarnings []string

	// folder is a folder's finish (Recompute): its options.
	folder *RecomputeOptions
	// aggFirst: a write failed during the run, so the aggregates go
	// first (into the room the collector kept).
	aggFirst bool
	// late is set once the aggregates are written: warnings go to
	// LateWarnings from then on.
	late bool
	// deferred are the outputs a deferrer moved after StageAmend.
	deferred []Output
	// err stops the pipeline (Fail).
	err error
	// marked: the late-signal mark went into the aggregates.
	marked bool
	// keptAggregate: a folder's recomputation left its aggregate as it
	// was (metrics.ErrAggregateKept): nothing is added to it.
	keptAggregate bool
}

// Warn adds a warning: to the aggregates' metadata.warnings before they
// are written, to Outcome.LateWarnings after (a folder's finish adds a
// late warning to the aggregate file too, as `agentperf report` does).
func (f *Finishing) Warn(w string) {
	if !f.late {
		f.Outcome.Warnings = append(f.Outcome.Warnings, w)
		return
	}
	f.Outcome.LateWarnings = append(f.Outcome.LateWarnings, w)
}

// Problem adds a problem of the run.
func (f *Finishing) Problem(kind ProblemKind, reason, msg string, err error) {
	f.Outcome.Problems = append(f.Outcome.Problems, Problem{Kind: kind, Reason: reason, Message: msg, Err: err})
}

// WriteProblem adds the failed write of what.
func (f *Finishing) WriteProblem(what string, err error) {
	f.Problem(ProblemWrite, "", fmt.Sprintf("writing %s failed: %v", what, err), err)
}

// Fail stops the pipeline with err: the finish returns it (a folder's
// finish that cannot go on).
func (f *Finishing) Fail(err error) {
	if f.err == nil {
		f.err = err
	}
}

// AggregatesWritten reports whether StageAggregates has run.
func (f *Finishing) AggregatesWritten() bool { return f.late }

// Folder reports whether this is a folder's finish (Recompute): no run,
// the outputs read the folder's files.
func (f *Finishing) Folder() bool { return f.folder != nil }

// stage runs the outputs of stage s (deferring those that ask).
func (f *Finishing) stage(s Stage, outs []Output) {
	for _, o := range outs {
		if f.err != nil {
			return
		}
		if o.Stage() != s {
			continue
		}
		if d, ok := o.(deferrer); ok && !f.late && d.Defer(f) {
			f.deferred = append(f.deferred, o)
			continue
		}
		o.Write(f)
	}
}

// runDeferred runs the outputs deferred past the aggregates.
func (f *Finishing) runDeferred() {
	for _, o := range f.deferred {
		if f.err != nil {
			return
		}
		o.Write(f)
	}
	f.deferred = nil
}

// run is the finishing pipeline: its stages in order, with the steps of
// the run itself between them (the verdict and metadata before the
// figure, the close of the metadata before the aggregates, the run's
// problems before the seal).
func (f *Finishing) run(outs []Output) error {
	f.prepare()
	f.stage(StageMeasure, outs)
	f.judge()
	f.stage(StageFigure, outs)
	f.closeInfo()
	f.stage(StageAggregates, outs)
	f.late = true
	f.stage(StageAmend, outs)
	f.runDeferred()
	f.stage(StagePublish, outs)
	f.runProblems()
	f.stage(StageSeal, outs)
	return f.err
}

// registered is the built-in outputs followed by the caller's.
func registered(extra []Output) []Output {
	return append(slices.Clone(outputs), extra...)
}

// prepare flushes the run's records; after a failed write (a full disk)
// the aggregates are written first, into the room the collector kept.
func (f *Finishing) prepare() {
	if f.Folder() {
		f.aggFirst = true // a folder's aggregates are rewritten first
		return
	}
	col := f.Input.Collector
	// The records buffered so far go to disk first: a write error of this
	// flush counts as one of the run (the aggregates then go first).
	_ = col.Flush()
	f.aggFirst = col.Err() != nil
	if f.aggFirst {
		f.Warn(fmt.Sprintf("%s is incomplete: a write failed (%v); %s%s holds the records written before, each complete, and %s",
			metrics.FileRecords, col.Err(), metrics.FileRecords, ".partial", metrics.WarnAggregatesCoverAll))
	}
}

// judge computes the run's verdict and its metadata (a run's only).
func (f *Finishing) judge() {
	if f.Folder() {
		return
	}
	f.Outcome.Verdict = f.verdict()
	f.Info = f.runInfo(f.Outcome.Verdict)
	if f.Input.GPU != nil {
		f.Outcome.GPU = f.Input.GPU.Result()
	}
}

// closeInfo marks a run interrupted by a signal that came while finishing
// and puts every warning so far into the metadata the aggregates write.
func (f *Finishing) closeInfo() {
	if f.Folder() {
		return
	}
	f.marked = f.markLateSignal(&f.Info)
	f.Info.Warnings = append(slices.Clone(f.Input.Warnings), f.Outcome.Warnings...)
}

// runProblems adds the run's own problems (an abort, the threshold, the
// verdict) and how it ended (interrupted).
func (f *Finishing) runProblems() {
	if f.Folder() {
		return
	}
	res, in := f.Result, f.Input
	if res.Aborted != "" {
		f.Problem(ProblemAborted, res.Aborted, "run aborted ("+res.Aborted+"): "+res.AbortMessage, nil)
	} else if msg := thresholdAtEnd(res.Accounting, in.FailedRequestThreshold, in.Shard != nil); msg != "" {
		f.Problem(ProblemThresholdExceeded, ReasonThresholdExceeded, msg, nil)
	}
	f.validityProblems(f.Outcome.Verdict)
	late := !res.Cancelled && f.signals() > 0
	if late && !f.marked {
		// The signal came after the aggregates were written: the mark
		// goes into their warnings, the exit code says it too.
		f.Warn(lateSignalWarning)
		if err := metrics.AddWarnings(f.Dir, lateSignalWarning); err != nil {
			f.Warn(fmt.Sprintf("the interruption could not be recorded in %s: %v", metrics.FileAggregateJSON, err))
		}
	}
	f.Outcome.Interrupted = res.Aborted == "" && (res.Cancelled || late)
	if res.Aborted == replay.AbortShardStopped && f.signals() > 0 {
		// scancel signals every shard: whichever heard of another's stop
		// first, this process was interrupted too, and exits as one.
		f.Outcome.Interrupted = true
	}
}

// verdict is the scenario verdict of the run.
func (f *Finishing) verdict() scenario.Verdict {
	res, in := f.Result, f.Input
	a := res.Accounting
	return scenario.Judge(scenario.JudgeInput{
		StaticReasons:     in.StaticReasons,
		Cancelled:         res.Cancelled || res.Aborted != "",
		Interrupted:       res.Cancelled && res.Aborted == "",
		Aborted:           res.Aborted,
		Overflows:         res.ProfilingOverflows,
		Responses:         a.ProfilingOK + a.ProfilingErrors + res.ProfilingOverflows,
		OverflowRateLimit: in.OverflowRateLimit,
		Coverage:          f.coverage(),
		Completed:         a.ProfilingOK,
	})
}

// RecomputeOptions is how Recompute finishes a folder again.
type RecomputeOptions struct {
	// NoPlot leaves metrics_plots.png as it is; NoHTML report.html.
	NoPlot, NoHTML bool
	// Force replaces an aggregate whose accounting adds up with a
	// recomputation from a .partial record file (metrics.RecomputeOptions).
	Force bool
	// Table, when set, receives the recomputed summary table.
	Table io.Writer
	// Outputs are the caller's outputs, run after the built-in ones of
	// their stage.
	Outputs []Output
}

// Recompute finishes an artifact folder again from its files, through
// the same pipeline as Finish (`agentperf report DIR`): the aggregates
// recomputed from the records (metrics.RecomputeWith, the summary table
// to opt.Table), then the plot and report.html drawn again from the
// folder, their warnings added to the aggregate (Outcome.LateWarnings).
//
// A recomputation never destroys a result: from
// profile_export.jsonl.partial it does not replace an aggregate whose
// accounting adds up (metrics.ErrAggregateKept) unless opt.Force, and
// the kept aggregate is left byte for byte as it was; that, and records
// that do not add up (metrics.ErrAccounting), are a ProblemRecount, and
// the plot and page are still drawn. The error is an *InputError for a
// folder that cannot be finished (no records, a malformed record file:
// metrics.ErrBadExport, fs.ErrNotExist), else a failed write.
func Recompute(dir string, opt RecomputeOptions) (*Outcome, error) {
	f := &Finishing{Dir: dir, Outcome: &Outcome{Dir: dir}, folder: &opt}
	err := f.run(registered(opt.Outputs))
	return f.Outcome, err
}
