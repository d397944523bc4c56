package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestLiveLinesMatchSummary: the last live log line (printed once every
// request has finished) shows the same profiling counts as the summary,
// and warmup requests are never counted as profiling ones, on a run with
// errors and context overflows. (The simulator fails every 7th request:
// the 6 warmup requests come first, and a failed warmup request would
// abort the run.) The run lasts 4 s: in CI under -race on a loaded
// machine, 1.5 s once ended with no profiling overflow.
func TestLiveLinesMatchSummary(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	code, out, errOut := runProfileCLI(context.Background(), t, "profile",
		"--url", "sim://?zero-latency=true&fault-500-every=7&max-model-len=60000", "--public-dataset", "synthetic:traces=10",
		"--model", "demo", "--concurrency", "6", "--benchmark-duration", "4",
		"--streaming", "--use-server-token-count", "--trace-idle-gap-cap-seconds", "0.01", "--no-plot",
		"--output-artifact-dir", dir, "--ui-type", "simple", "--stats-interval", "0.25")
	if code != 0 && code != 1 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var status []string
	for _, l := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(l, "[") {
			status = append(status, l)
		}
	}
	if len(status) < 2 {
		t.Fatalf("want live status lines on stderr, got:\n%s", errOut)
	}
	lineRE := regexp.MustCompile(`\] (\d+) ok, (\d+) errors, (\d+) overflows, (\d+) cancelled, (\d+) in flight`)
	m := lineRE.FindStringSubmatch(status[len(status)-1])
	if m == nil {
		t.Fatalf("last status line %q has no counts", status[len(status)-1])
	}
	sumRE := regexp.MustCompile(`Profiling: (\d+) ok, (\d+) errors, (\d+) cancelled, (\d+) context overflows; warmup: (\d+) ok, (\d+) errors, (\d+) cancelled, (\d+) context overflows`)
	s := sumRE.FindStringSubmatch(out)
	if s == nil {
		t.Fatalf("summary line not found:\n%s", out)
	}
	agg := readAggregate(t, dir)
	profOvf := int(num(agg, "metadata", "agentperf", "profiling_overflows"))
	got := fmt.Sprintf("%s ok, %s errors, %s overflows, %s cancelled, %s in flight", m[1], m[2], m[3], m[4], m[5])
	want := fmt.Sprintf("%s ok, %s errors, %d overflows, %s cancelled, 0 in flight", s[1], s[2], profOvf, s[3])
	if got != want {
		t.Errorf("last live line says %q, the summary %q\nlast line: %s\nsummary: %s", got, want, status[len(status)-1], s[0])
	}
	if s[2] == "0" || s[5] == "0" || s[4] == "0" {
		t.Errorf("fixture: want profiling errors, warmup successes and profiling overflows, got %q", s[0])
	}
	// The summary's profiling overflows are the profiling phase's only.
	if s[4] != fmt.Sprint(profOvf) {
		t.Errorf("the summary says %s profiling context overflows, the engine counted %d", s[4], profOvf)
	}
	// The requests line splits the cancellations as the first line does.
	if !strings.Contains(out, fmt.Sprintf("cancelled (profiling %s, warmup %s)", s[3], s[7])) {
		t.Errorf("the requests line does not split the cancellations like the first line (%q):\n%s", s[0], out)
	}
}
