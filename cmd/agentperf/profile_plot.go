package main

import (
	"fmt"

	"github.com/agentperf/agentperf/metrics/htmlreport"
	"github.com/agentperf/agentperf/metrics/plot"
)

// renderPlot renders metrics_plots.png from an artifact directory.
func renderPlot(dir string) ([]string, error) { return plot.RenderDir(dir) }

// writeHTMLReport writes report.html into an artifact directory; the error
// says what failed and where.
func writeHTMLReport(dir string) ([]string, error) {
	w, err := htmlreport.WriteDir(dir)
	if err != nil {
		return w, fmt.Errorf("writing %s failed: %w", htmlreport.FileName, err)
	}
	return w, nil
}
