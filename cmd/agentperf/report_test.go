package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/metrics"
)

// writeArtifacts runs three records through a Collector into dir.
func writeArtifacts(t *testing.T, dir string, acct metrics.Accounting) {
	t.Helper()
	c, err := metrics.NewCollector(dir, metrics.CollectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 8, 12, 14, 0, 0, 0, time.UTC).UnixNano()
	for i := range 3 {
		start := base + int64(i)*int64(time.Second)
		c.Add(&metrics.Record{Phase: metrics.PhaseProfiling, RequestStartNs: start,
			FirstChunkNs: start + 100e6, SecondChunkNs: start + 110e6, LastChunkNs: start + 200e6, RequestEndNs: start + 201e6,
			Usage: &metrics.Usage{PromptTokens: 1000, CompletionTokens: 11, TotalTokens: 1011}, HitBlocks: 1, TotalBlocks: 2})
	}
	if _, err := c.Finish(metrics.RunInfo{BenchmarkID: "b1", Accounting: acct}); err != nil && acct.Sent == 3 {
		t.Fatal(err)
	}
}

func TestReportCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeArtifacts(t, dir, metrics.Accounting{Sent: 3, ProfilingOK: 3})
	if err := os.Remove(filepath.Join(dir, metrics.FileAggregateCSV)); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"report", dir}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "Profiling: 3 ok") || !strings.Contains(out.String(), "Time to First Token (ms)") {
		t.Errorf("summary:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, metrics.FileAggregateCSV)); err != nil {
		t.Errorf("CSV not rewritten: %v", err)
	}
	png, err := os.ReadFile(filepath.Join(dir, "metrics_plots.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("metrics_plots.png not rendered: %v", err)
	}
	// Plot warnings (no server metrics here) are on stderr and in the JSON,
	// once however often report runs.
	t.Logf("stderr: %s", errb.String())
	count := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, metrics.FileAggregateJSON))
		var agg struct {
			Metadata struct{ Warnings []string } `json:"metadata"`
		}
		if err := json.Unmarshal(b, &agg); err != nil {
			t.Fatal(err)
		}
		return len(agg.Metadata.Warnings)
	}
	n := count()
	if strings.Contains(errb.String(), "warning:") != (n > 0) {
		t.Errorf("stderr warnings and metadata.warnings (%d) disagree:\n%s", n, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"report", dir}, &out, &errb); code != exitOK || count() != n {
		t.Errorf("second report: exit %d, %d warnings (want %d)", code, count(), n)
	}
}

func TestReportCommandNoPlot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeArtifacts(t, dir, metrics.Accounting{Sent: 3, ProfilingOK: 3})
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"report", "--no-plot", dir}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "metrics_plots.png")); !os.IsNotExist(err) {
		t.Errorf("--no-plot rendered the plot (%v)", err)
	}
}

func TestReportCommandErrors(t *testing.T) {
	t.Parallel()
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, metrics.FileRecords), []byte("{\"metadata\":{}}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mismatch := t.TempDir()
	writeArtifacts(t, mismatch, metrics.Accounting{Sent: 5, ProfilingOK: 3})
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"report", "--help"}, exitOK, "agentperf report results/aiperf_artifacts"},
		{"no folder", []string{"report"}, exitUsage, "exactly one artifact folder"},
		{"missing folder", []string{"report", filepath.Join(bad, "nope")}, exitUsage, "profile_export.jsonl"},
		{"malformed line", []string{"report", bad}, exitUsage, "profile_export.jsonl:2"},
		{"accounting", []string{"report", "--no-plot", mismatch}, exitRunFailed, "2 requests are missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), c.args, &out, &errb)
			if code != c.code || !strings.Contains(out.String()+errb.String(), c.want) {
				t.Fatalf("exit %d (want %d), output:\n%s%s\nwant %q", code, c.code, out.String(), errb.String(), c.want)
			}
		})
	}
}
