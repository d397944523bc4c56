package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/capacity"
)

// TestSweepResumeChecksSettings (issue 34, case 11): a sweep in a folder
// whose points were made with another seed and duration runs them again
// and says which settings differ; it never counts the earlier sweep's
// points as its own ("3 of 2 point(s) complete").
func TestSweepResumeChecksSettings(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	args := append([]string{"sweep"}, pointArgs("sim://?zero-latency", dir, "--concurrency", "2,3,4")...)
	if code, out, errOut := runProfileCLI(context.Background(), t, args...); code != 0 {
		t.Fatalf("first sweep: exit %d\n%s\n%s", code, out, errOut)
	}
	first, _ := os.ReadFile(filepath.Join(dir, "c2", "profile_export.jsonl"))
	args = append([]string{"sweep"}, pointArgs("sim://?zero-latency", dir, "--concurrency", "2,3", "--random-seed", "8", "--benchmark-duration", "2")...)
	code, out, errOut := runProfileCLI(context.Background(), t, args...)
	if code != 0 {
		t.Fatalf("second sweep: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"point 1/2 (concurrency 2): the earlier sweep's point was made with other settings (--benchmark-duration 1 → 2; --random-seed 7 → 8): it runs again",
		"point 2/2: concurrency 3 →",
		"c4 (concurrency 4, from an earlier sweep and not in this one) was made with other settings",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("log lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, "sweep: 2 of 2 point(s) complete") {
		t.Errorf("output:\n%s", out)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "c2", "profile_export.jsonl")); bytes.Equal(first, again) {
		t.Error("c2 was not run again")
	}
	if old, _ := os.ReadFile(filepath.Join(dir, "c2.replaced", "profile_export.jsonl")); !bytes.Equal(first, old) {
		t.Error("the first sweep's c2 was not kept as c2.replaced")
	}
	if rows := tableShape(t, dir); len(rows) != 2 {
		t.Errorf("table rows %v, want c2 and c3 only", rows)
	}
	pts, err := capacity.ReadManifest(dir)
	if err != nil || len(pts) != 3 || pts[0].Settings["--random-seed"] != "8" || pts[2].Settings["--random-seed"] != "7" {
		t.Errorf("manifest %+v (%v)", pts, err)
	}
}
