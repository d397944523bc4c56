//go:build wip

package main

// renderPlot renders metrics_plots.png from an artifact directory.
var renderPlot = func(dir string) ([]string, error) { return nil, nil }
