package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportKeepsAnAddingUpAggregate (issue 34, case 6): after one
// duplicated record line, or a stub line {"metadata":{}} (which counted as
// a successful profiling request), `report` used to replace an aggregate
// whose accounting added up with one that does not, keeping no copy. Now
// the stub line is an error naming file:line (exit 2), and a recount that
// does not add up goes beside the aggregate (exit 1); the aggregate stays
// byte for byte.
func TestReportKeepsAnAddingUpAggregate(t *testing.T) {
	if testing.Short() {
		t.Skip("a run of a second")
	}
	base := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runCmd(t, "profile", "--url", "sim://?zero-latency=true", "--public-dataset", "synthetic:traces=8",
		"--model", "demo", "--tokenizer", "builtin", "--concurrency", "2", "--benchmark-duration", "1",
		"--streaming", "--trace-idle-gap-cap-seconds", "0.01", "--output-artifact-dir", base, "--ui-type", "none", "--no-plot")
	if code != exitOK {
		t.Fatalf("profile: exit %d\n%s", code, stderr)
	}
	records, err := os.ReadFile(filepath.Join(base, "profile_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(records), "\n")
	for _, tc := range []struct {
		name, extra string
		code        int
		says        []string
	}{
		{"duplicated line", lines[0], exitRunFailed, []string{"profile_export_aiperf_recomputed.json", "says its accounting adds up"}},
		{"stub line", `{"metadata":{}}` + "\n", exitUsage, []string{fmt.Sprintf("profile_export.jsonl:%d", len(lines)), "metadata.request_start_ns"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			os.CopyFS(dir, os.DirFS(base))
			os.WriteFile(filepath.Join(dir, "profile_export.jsonl"), append(bytes.Clone(records), tc.extra...), 0o644)
			before, _ := os.ReadFile(filepath.Join(dir, "profile_export_aiperf.json"))
			code, stdout, stderr := runCmd(t, "report", dir, "--no-plot")
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s\n%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.says {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if after, _ := os.ReadFile(filepath.Join(dir, "profile_export_aiperf.json")); !bytes.Equal(before, after) {
				t.Errorf("the aggregate whose accounting added up was replaced")
			}
		})
	}
}
