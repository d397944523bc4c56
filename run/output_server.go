package run

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentperf/agentperf/server/servermetrics"
)

// serverExport writes the server metrics export of a run that scraped its
// server (server_metrics_export.json/.csv) and checks the required metric
// prefix; its derived figures (Outcome.Derived) go into the aggregates'
// metadata. After a failed write during the run it waits for the
// aggregates, then only writes the export.
type serverExport struct{}

func (serverExport) Stage() Stage              { return StageMeasure }
func (serverExport) Defer(f *Finishing) bool   { return f.aggFirst }
func (serverExport) enabled(f *Finishing) bool { return !f.Folder() && f.Input.Scraper != nil }

func (o serverExport) Write(f *Finishing) {
	if !o.enabled(f) {
		return
	}
	in := f.Input
	if f.AggregatesWritten() {
		if _, err := in.Scraper.Export(f.Dir); err != nil {
			f.WriteProblem("the server metrics export", err)
		}
		return
	}
	d, err := in.Scraper.Export(f.Dir)
	if err != nil {
		f.WriteProblem("the server metrics export", err)
	} else {
		f.Outcome.Derived = d
	}
	if d != nil && d.CollectionError != "" {
		f.Warn("server metrics: collection stopped by an " + d.CollectionError)
	}
	if pre := in.RequiredServerMetricPrefix; pre != "" {
		if has, err := servermetrics.HasMetricPrefix(filepath.Join(f.Dir, servermetrics.JSONFile), pre); err != nil || !has {
			f.Problem(ProblemRequiredMetric, "", fmt.Sprintf("Input.RequiredServerMetricPrefix=%s: no metric with that prefix was scraped from %s", pre, strings.Join(in.Scraper.URLs(), ", ")), nil)
		}
	}
}
