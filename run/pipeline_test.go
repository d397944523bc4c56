package run_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/run"
)

// requestCount is an artifact an embedder registers on the finishing
// pipeline (Input.Outputs, RecomputeOptions.Outputs): after the
// aggregates, a file with the number of requests they counted.
type requestCount struct {
	stage run.Stage
	seen  *[]string
}

func (o requestCount) Stage() run.Stage { return o.stage }

func (o requestCount) Write(f *run.Finishing) {
	*o.seen = append(*o.seen, fmt.Sprintf("stage %d, aggregates written %v, summary %v, folder %v", o.stage, f.AggregatesWritten(), f.Summary != nil, f.Folder()))
	if f.Summary == nil {
		f.Warn("request_count.txt: no aggregates")
		return
	}
	if err := os.WriteFile(filepath.Join(f.Dir, "request_count.txt"), fmt.Appendf(nil, "%d\n", f.Summary.RequestCount), 0o644); err != nil {
		f.WriteProblem("request_count.txt", err)
	}
}

// TestRegisteredOutputRunsInItsStage: an output registered at the edge
// runs in the stage it names, in a run's finish (Finish) and in a
// folder's (Recompute), sees the aggregates from StageAggregates on, and
// its warnings before the aggregates are in them, after are late.
func TestRegisteredOutputRunsInItsStage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res, col, syn := simRun(t, dir, 0)
	var seen []string
	out, err := run.Finish(res, run.Input{Dir: dir, Collector: col, Synth: syn, Duration: 300 * time.Millisecond, Concurrency: 4,
		Outputs: []run.Output{requestCount{run.StageMeasure, &seen}, requestCount{run.StagePublish, &seen}}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Failed() {
		t.Fatalf("problems %v", out.Problems)
	}
	want := []string{
		fmt.Sprintf("stage %d, aggregates written false, summary false, folder false", run.StageMeasure),
		fmt.Sprintf("stage %d, aggregates written true, summary true, folder false", run.StagePublish),
	}
	if !slices.Equal(seen, want) {
		t.Errorf("the outputs ran as %q, want %q", seen, want)
	}
	if !slices.Contains(out.Warnings, "request_count.txt: no aggregates") {
		t.Errorf("the early output's warning is not among the aggregates' warnings %q", out.Warnings)
	}
	agg, err := metrics.ReadAggregateFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(agg.Metadata.Warnings, "request_count.txt: no aggregates") {
		t.Errorf("metadata.warnings %q lack the early output's warning", agg.Metadata.Warnings)
	}
	b, err := os.ReadFile(filepath.Join(dir, "request_count.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != fmt.Sprint(out.Summary.RequestCount) || out.Summary.RequestCount == 0 {
		t.Errorf("request_count.txt %q, the aggregates counted %d", got, out.Summary.RequestCount)
	}

	// The same output on a folder's finish.
	os.Remove(filepath.Join(dir, "request_count.txt"))
	seen = nil
	rout, err := run.Recompute(dir, run.RecomputeOptions{NoPlot: true, Outputs: []run.Output{requestCount{run.StagePublish, &seen}}})
	if err != nil {
		t.Fatal(err)
	}
	if rout.Failed() {
		t.Fatalf("recompute problems %v", rout.Problems)
	}
	if want := []string{fmt.Sprintf("stage %d, aggregates written true, summary true, folder true", run.StagePublish)}; !slices.Equal(seen, want) {
		t.Errorf("on a folder the output ran as %q, want %q", seen, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "request_count.txt")); err != nil {
		t.Error(err)
	}
}

// TestRecomputeRefusesAFolderWithoutRecords: a folder that is not an
// artifact folder is an *InputError, and nothing is written.
func TestRecomputeRefusesAFolderWithoutRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := run.Recompute(dir, run.RecomputeOptions{})
	var ie *run.InputError
	if !errors.As(err, &ie) {
		t.Fatalf("Recompute of an empty folder: %v, want an *InputError", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("Recompute wrote %d files into a folder it refused", len(ents))
	}
}
