package run

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/htmlreport"
)

// reportHTML writes report.html: the aggregates and the figure input read
// by the figure output (a run's), or the folder's files (a folder's).
type reportHTML struct{}

func (reportHTML) Stage() Stage { return StagePublish }

func (reportHTML) Write(f *Finishing) {
	if f.Folder() {
		if f.folder.NoHTML {
			return
		}
		warnings, err := htmlreport.WriteDir(f.Dir)
		if err != nil {
			for _, w := range warnings {
				f.Warn(w)
			}
			f.Fail(fmt.Errorf("report %s: writing %s failed: %w", f.Dir, htmlreport.FileName, err))
			return
		}
		f.addWarnings("record report.html warnings", warnings)
		return
	}
	// report.html shows the aggregates: without them (their write
	// failed, reported) there is nothing to show.
	if _, err := os.Stat(filepath.Join(f.Dir, metrics.FileAggregateJSON)); err != nil {
		f.Problem(ProblemWrite, "", "report.html was not written: it shows "+metrics.FileAggregateJSON+", which could not be written", err)
	} else if hw, err := htmlreport.WriteDirWith(f.Dir, f.Figure, f.FigureWarnings); err != nil {
		f.WriteProblem(htmlreport.FileName, err)
	} else {
		for _, w := range hw {
			f.Warn(w)
		}
	}
}
