package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/internal/testshared"
)

var updatePlan = flag.Bool("update-plan", false, "rewrite the dataset plan golden files under testdata/plan")

// TestDatasetPlanGolden: the sessions of a small hand-made corpus (a
// trace with a joined flat chain, a background reduction chain and a
// subagent split into two chains; a trace that does not split), under
// v1.0, under AIPERF_DATASET_WEKA_SPLIT_FLATTENED_AGENTS=false, and under
// v0.3.
func TestDatasetPlanGolden(t *testing.T) {
	in := filepath.Join("testdata", "plan", "layout.jsonl")
	cases := []struct {
		golden string
		env    string
		args   []string
	}{
		{"v10.golden.jsonl", "", nil},
		{"v10-nosplit.golden.jsonl", "false", nil},
		{"v03.golden.jsonl", "", []string{"--agentx-generation", "v0.3"}},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			t.Setenv("AIPERF_DATASET_WEKA_SPLIT_FLATTENED_AGENTS", c.env)
			t.Setenv(envGeneration, "")
			args := append([]string{"dataset", "plan", "--input-file", in, "--no-dataset-cache", "--format", "json"}, c.args...)
			code, out, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			path := filepath.Join("testdata", "plan", c.golden)
			if *updatePlan {
				if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update-plan to create it)", err)
			}
			if out != string(want) {
				t.Errorf("dataset plan output differs from %s:\n got %s\nwant %s", path, out, want)
			}
		})
	}
}

func TestDatasetPlanBadEnv(t *testing.T) {
	t.Setenv("AIPERF_DATASET_WEKA_SEAM_MIN_OVERLAP_RATIO", "2")
	code, _, stderr := runCLI(t, "dataset", "plan", "--input-file", filepath.Join("testdata", "plan", "layout.jsonl"), "--no-dataset-cache")
	if code != 2 || !strings.Contains(stderr, "AIPERF_DATASET_WEKA_SEAM_MIN_OVERLAP_RATIO") {
		t.Errorf("exit %d, stderr %q: want a usage error naming the variable", code, stderr)
	}
}

// TestDatasetPlanKVCT200: the v1.0 layout of the 200 real traces, as the
// pinned loader's rule gives it (docs/replay.md).
func TestDatasetPlanKVCT200(t *testing.T) {
	path := testshared.Path(t, "traces/kvct-200.jsonl.zst")
	t.Setenv("AIPERF_DATASET_WEKA_SPLIT_FLATTENED_AGENTS", "")
	t.Setenv(envGeneration, "")
	code, out, stderr := runCLI(t, "dataset", "plan", "--input-file", path, "--no-dataset-cache")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"traces split:     42 of 200",
		"flat chains:      69 (62 fa, 7 aux:red)",
		"seams merged:     386 in split traces (910 in all traces)",
		"preambles:        0 set aside in split traces (1 in all traces)",
		"requests moved:   2,531 of 14,867 top-level requests (17.0 %) leave the root; per trace p90 35.7 %, max 94.7 %",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("totals lack %q:\n%s", want, out[strings.Index(out, "AgentX"):])
		}
	}
}
