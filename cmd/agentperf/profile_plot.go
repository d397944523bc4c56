package main

import "github.com/agentperf/agentperf/metrics/plot"

// renderPlot renders metrics_plots.png from an artifact directory.
func renderPlot(dir string) ([]string, error) { return plot.RenderDir(dir) }
