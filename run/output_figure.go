package run

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/htmlreport"
	"github.com/agentperf/agentperf/metrics/plot"
	"github.com/agentperf/agentperf/server/servermetrics"
)

// figure reads the figure's input once, for metrics_plots.png and
// report.html (Finishing.Figure), and renders the plot. A run's requests
// come from the aggregates the collector holds (no second read of the
// record file), its server panels from the export just written; a
// folder's from its files (plot.ReadDir). A run under a scheduler's
// SIGTERM draws it after the aggregates: the kill follows, and the figure
// takes longest.
type figure struct{}

func (figure) Stage() Stage { return StageFigure }
func (figure) Defer(f *Finishing) bool {
	return f.aggFirst || f.Result != nil && f.Result.Terminated != nil
}

func (figure) Write(f *Finishing) {
	if f.Folder() {
		figureFromFolder(f)
		return
	}
	ps := f.Result.ProfilingStart
	if ps.IsZero() {
		ps = f.Result.StartTime
	}
	var psNs int64
	if !ps.IsZero() {
		psNs = ps.UnixNano()
	}
	ex, rw := plot.ReadServerExport(filepath.Join(f.Dir, servermetrics.JSONFile))
	fig := plot.Input{Requests: plot.PointsFrom(f.Input.Collector.EachRequest), Server: ex, ProfilingStartNs: psNs}
	if !f.Input.NoPlot {
		w, err := plot.Render(fig, filepath.Join(f.Dir, plot.FileName))
		for _, s := range append(slices.Clone(rw), w...) {
			f.Warn(s)
		}
		if err != nil {
			f.Warn(fmt.Sprintf("%s was not rendered: %v", plot.FileName, err))
		}
	}
	hw := htmlreport.FigureWarnings(rw)
	for _, s := range hw {
		f.Warn(s)
	}
	f.Figure, f.FigureWarnings = fig, hw
}

// figureFromFolder re-renders a folder's plot from its files and adds
// the warnings to its aggregates (report.html reads the folder itself).
func figureFromFolder(f *Finishing) {
	if f.folder.NoPlot {
		return
	}
	warnings, err := plot.RenderDir(f.Dir)
	if err != nil {
		warnings = append(warnings, fmt.Sprintf("metrics_plots.png was not rendered: %v", err))
	}
	f.addWarnings("record plot warnings", warnings)
}

// addWarnings adds late warnings of a folder's finish to the outcome and
// to its aggregate file, unless the aggregate was kept as it was.
func (f *Finishing) addWarnings(what string, warnings []string) {
	for _, w := range warnings {
		f.Warn(w)
	}
	if f.keptAggregate {
		return // the kept aggregate is not touched; the warnings are in the outcome
	}
	if err := metrics.AddWarnings(f.Dir, warnings...); err != nil {
		f.Fail(fmt.Errorf("report %s: %s: %w", f.Dir, what, err))
	}
}
