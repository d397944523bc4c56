package servermetrics

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestScraperPanicStopsCollectionNotTheRun: a panic inside the scraper's
// own code (injected here at the scrape that follows the baseline) must
// not escape any entry point the run calls. The scraper stops fetching,
// Err names what happened, the live view says it stopped, and the export
// is still written: no metrics, the error in summary.collection_error and
// in Derived.CollectionError, and a log line that says the run goes on.
func TestScraperPanicStopsCollectionNotTheRun(t *testing.T) {
	t.Parallel()
	var fetched atomic.Int64
	r := newRig(t, func(k int) string { fetched.Add(1); return vllmPage(k) })
	s := New(Config{URLs: []string{r.url()}, Interval: 5 * time.Millisecond, Clock: r.clock, Logf: r.logf})
	var calls atomic.Int64
	s.testHook = func() {
		if calls.Add(1) == 2 {
			var ring [4]int
			i := -int(calls.Load()) + 1 // -1: the bug class of the llm-d crash
			_ = ring[i]
		}
	}
	ctx := t.Context()
	s.Baseline(ctx)
	if s.Err() != nil {
		t.Fatalf("stopped after the baseline: %v", s.Err())
	}
	s.MarkProfilingStart(r.at(0))
	r.k.Store(1)
	runCtx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	s.Run(runCtx) // returns once the collection stopped
	if runCtx.Err() != nil {
		t.Fatal("Run kept going after the scraper stopped")
	}
	var ce *CollectionError
	if err := s.Err(); !errors.As(err, &ce) || !strings.Contains(ce.Where, "scraping "+r.url()) || !strings.Contains(err.Error(), "index out of range") || len(ce.Stack) == 0 {
		t.Fatalf("Err() = %v (%+v)", err, ce)
	}
	before := fetched.Load()
	s.Scrape(ctx)
	s.MarkProfilingEnd(r.at(3))
	s.Final(ctx)
	if fetched.Load() != before {
		t.Errorf("a stopped scraper fetched %d more pages", fetched.Load()-before)
	}
	if lf := s.Live(); !lf.Stopped || lf.Scrapes != 0 {
		t.Errorf("Live() = %+v, want Stopped", lf)
	}
	dir := t.TempDir()
	d, err := s.Export(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.CollectionError, "index out of range") || !strings.Contains(d.CollectionError, "without server metrics") {
		t.Errorf("Derived.CollectionError = %q", d.CollectionError)
	}
	ex, err := ReadExport(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Metrics) != 0 || ex.Summary.CollectionError != d.CollectionError || len(ex.Summary.EndpointsConfigured) != 1 {
		t.Errorf("export after the stop: %d metrics, summary %+v", len(ex.Metrics), ex.Summary)
	}
	if _, err := os.Stat(filepath.Join(dir, CSVFile)); err != nil {
		t.Errorf("csv not written: %v", err)
	}
	if logs := r.logText(); !strings.Contains(logs, "server metrics are off for the rest of the run (the run continues") || strings.Count(logs, "internal error") != 1 {
		t.Errorf("log does not report the stop exactly once:\n%s", logs)
	}
}
