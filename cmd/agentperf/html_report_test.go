package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/metrics"
)

// TestReportRegeneratesHTML: `agentperf report DIR` rewrites report.html
// (unless --no-html), with the recomputed summary in it.
func TestReportRegeneratesHTML(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeArtifacts(t, dir, metrics.Accounting{Sent: 3, ProfilingOK: 3})
	page := filepath.Join(dir, "report.html")
	var out, errb bytes.Buffer
	if code := runMain(context.Background(), []string{"report", "--no-plot", "--no-html", dir}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if _, err := os.Stat(page); !os.IsNotExist(err) {
		t.Fatalf("--no-html wrote report.html (stat: %v)", err)
	}
	if code := runMain(context.Background(), []string{"report", "--no-plot", dir}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatalf("report did not write report.html: %v", err)
	}
	if !bytes.Contains(b, []byte(`"Time to First Token"`)) || !bytes.Contains(b, []byte("benchmark b1")) {
		t.Errorf("report.html lacks the summary (%d bytes)", len(b))
	}
}

// TestProfileWritesHTMLReport: a run leaves report.html with its
// artifacts.
func TestProfileWritesHTMLReport(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	code, out, errOut := runProfileCLI(context.Background(), t, "profile",
		"--url", "sim://?zero-latency=true", "--public-dataset", "synthetic:traces=4",
		"--model", "demo", "--concurrency", "2", "--benchmark-duration", "0.5",
		"--streaming", "--use-server-token-count", "--trace-idle-gap-cap-seconds", "0.01", "--no-plot",
		"--output-artifact-dir", dir, "--ui-type", "none")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatalf("no report.html: %v", err)
	}
	if !strings.Contains(string(b), "KV cache utilisation") || strings.Contains(errOut, "report.html") {
		t.Errorf("report.html incomplete or warned about:\n%s", errOut)
	}
}
