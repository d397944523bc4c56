package metrics

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSummarizeWritesNothing: Summarize computes what Report computes
// (the same counts and throughputs) and leaves every file of the folder
// as it was, the aggregate CSV it would rewrite included.
func TestSummarizeWritesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fin := runFixture(t, dir)
	csvPath := filepath.Join(dir, FileAggregateCSV)
	if err := os.WriteFile(csvPath, []byte("sentinel"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, dir, FileAggregateJSON)
	s, err := Summarize(dir, RecomputeOptions{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, FileAggregateJSON); !bytes.Equal(got, before) {
		t.Error("Summarize rewrote the aggregate JSON")
	}
	if got := readFile(t, dir, FileAggregateCSV); string(got) != "sentinel" {
		t.Error("Summarize rewrote the aggregate CSV")
	}
	if s.RequestCount != fin.RequestCount || s.ErrorRequestCount != fin.ErrorRequestCount ||
		s.RequestThroughput != fin.RequestThroughput || s.OutputTokenThroughput != fin.OutputTokenThroughput {
		t.Errorf("Summarize: %d ok %d err %.6f req/s %.6f tok/s; Finish: %d ok %d err %.6f req/s %.6f tok/s",
			s.RequestCount, s.ErrorRequestCount, s.RequestThroughput, s.OutputTokenThroughput,
			fin.RequestCount, fin.ErrorRequestCount, fin.RequestThroughput, fin.OutputTokenThroughput)
	}
	if _, err := Summarize(filepath.Join(dir, "missing"), RecomputeOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing folder: %v", err)
	}
}

// TestReportDefaultLocation: Report without options (the local time zone)
// rewrites a folder whose run has profiling timestamps.
func TestReportDefaultLocation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runFixture(t, dir)
	if _, err := Recompute(dir, nil); err != nil {
		t.Fatal(err)
	}
}
