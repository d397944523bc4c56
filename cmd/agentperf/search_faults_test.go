package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestSearchStreamingOnlyTermNeedsStreaming (issue 34, case 9): a TTFT or
// ITL objective without --streaming is a usage error before any probe,
// not a search whose every probe fails with "no value in the run".
func TestSearchStreamingOnlyTermNeedsStreaming(t *testing.T) {
	clearAIPerfEnv(t)
	s := startTestSim(t)
	dir := t.TempDir()
	args := slices.DeleteFunc(pointArgs(s.URL, dir), func(a string) bool { return a == "--streaming" })
	args = append([]string{"search", "--slo", "ttft.p99<=2s,itl.p99<=50ms,errors<=1%", "--concurrency-range", "1:2"}, args...)
	code, out, errOut := runProfileCLI(context.Background(), t, args...)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d (usage)\n%s\n%s", code, exitUsage, out, errOut)
	}
	if !strings.Contains(errOut, "--streaming") || !strings.Contains(errOut, "ttft.p99<=2s, itl.p99<=50ms") {
		t.Errorf("the error does not name the terms and --streaming:\n%s", errOut)
	}
	if n := s.Stats().Requests; n != 0 {
		t.Errorf("the simulator got %d requests: a probe ran", n)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the search folder holds %d entries: something ran", len(ents))
	}
	// Request latency is measured without streaming: the same search with
	// an e2el objective runs.
	args[2] = "e2el.p99<=60s,errors<=50%"
	if code, out, errOut := runProfileCLI(context.Background(), t, args...); code != 0 {
		t.Fatalf("e2el objective without streaming: exit %d\n%s\n%s", code, out, errOut)
	}
}
