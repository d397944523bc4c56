package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs agentperf with args; dataset commands get a private cache
// directory so tests never touch the user's cache.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	if len(args) >= 2 && args[0] == "dataset" && args[1] == "info" {
		args = append(args, "--dataset-cache-dir", t.TempDir())
	}
	var o, e bytes.Buffer
	code = runMain(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

func TestDatasetSynthThenInfo(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "synth.jsonl.zst")
	code, stdout, stderr := runCLI(t, "dataset", "synth", "--seed", "5", "--traces", "12", "--subagents", "-o", out)
	if code != 0 {
		t.Fatalf("synth exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "wrote 12 traces") {
		t.Errorf("synth output %q", stdout)
	}
	// same seed, same bytes
	out2 := filepath.Join(dir, "again.jsonl.zst")
	if code, _, stderr := runCLI(t, "dataset", "synth", "--seed", "5", "--traces", "12", "--subagents", "-o", out2); code != 0 {
		t.Fatal(stderr)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(out2)
	if !bytes.Equal(a, b) || len(a) == 0 {
		t.Error("same seed wrote different files")
	}

	code, stdout, stderr = runCLI(t, "dataset", "info", "--input-file", out, "--json")
	if code != 0 {
		t.Fatalf("info exit %d: %s", code, stderr)
	}
	var rep struct {
		Identity struct {
			SourceType string `json:"source_type"`
			Traces     int    `json:"traces"`
		} `json:"identity"`
		Stats struct {
			Traces           int `json:"traces"`
			ParentRequests   int `json:"parent_requests"`
			SubagentRequests int `json:"subagent_requests"`
			Hit              struct {
				Definition string  `json:"definition"`
				Rate       float64 `json:"rate"`
			} `json:"theoretical_prefix_cache_hit_rate"`
		} `json:"stats"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, stdout)
	}
	if rep.Stats.Traces != 12 || rep.Stats.ParentRequests < 12*30 || rep.Stats.SubagentRequests == 0 || rep.Identity.SourceType != "file" {
		t.Errorf("report %+v", rep)
	}
	if !strings.HasPrefix(rep.Stats.Hit.Definition, "C:") || rep.Stats.Hit.Rate <= 0.5 {
		t.Errorf("hit rate %+v", rep.Stats.Hit)
	}

	code, stdout, _ = runCLI(t, "dataset", "info", "--input-file", out, "--num-dataset-entries", "5")
	for _, want := range []string{"loaded          5 of 12 traces", "turns per trace", "theoretical prefix-cache hit rate", "definition C: aiperf leading-run", "> 128k"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("table (exit %d) lacks %q:\n%s", code, want, stdout)
		}
	}
}

func TestDatasetInfoSynthetic(t *testing.T) {
	code, stdout, stderr := runCLI(t, "dataset", "info", "--public-dataset", "synthetic")
	if code != 0 || !strings.Contains(stdout, "generated in memory") || !strings.Contains(stdout, "traces          40") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}

func TestDatasetInfoErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"id":"a","requests":[{"t":0,"type":"n","in":1,"out":1,"hash_ids":[]}]}`+"\n"+`{"id":"b","requests":[{"t":0,"type":"n","in":-1,"out":1,"hash_ids":[]}]}`+"\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no source", []string{"dataset", "info"}, 2, "no dataset given"},
		{"invalid trace", []string{"dataset", "info", "--input-file", bad}, 2, "bad.jsonl:2"},
		{"missing file", []string{"dataset", "info", "--input-file", filepath.Join(dir, "nope.jsonl")}, 2, "nope.jsonl"},
		{"unknown alias", []string{"dataset", "info", "--public-dataset", "nope"}, 2, "semianalysis_cc_traces_weka_062126"},
		{"context drops all", []string{"dataset", "info", "--public-dataset", "synthetic", "--max-context-length", "1000"}, 2, "drops all"},
		{"stray argument", []string{"dataset", "info", "x.jsonl"}, 2, "--input-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.want)
			}
		})
	}
	code, stdout, _ := runCLI(t, "dataset", "info", "--input-file", bad, "--skip-invalid-traces")
	if code != 0 || !strings.Contains(stdout, "skipped         1 invalid traces") || !strings.Contains(stdout, "bad.jsonl:2") {
		t.Errorf("--skip-invalid-traces: exit %d\n%s", code, stdout)
	}
}

func TestDatasetSynthUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"dataset", "synth"}, 2, "-o FILE is required"},
		{[]string{"dataset", "synth", "--traces", "0", "-o", "x.jsonl"}, 2, "--traces"},
		{[]string{"dataset", "synth", "--max-context", "1000", "-o", "x.jsonl"}, 2, "too small"},
		{[]string{"dataset", "synth", "-o", "x.csv"}, 2, ".jsonl"},
		{[]string{"dataset", "synth", "--subagent-share", "0.3", "-o", "x.jsonl"}, 2, "needs --subagents"},
		{[]string{"dataset", "synth", "--subagents", "--subagent-share", "0.9", "-o", "x.jsonl"}, 2, "--subagent-share must be in"},
		{[]string{"dataset", "synth", "--time-scale", "1e9", "-o", "x.jsonl"}, 2, "--time-scale must be in"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, stderr)
		}
	}
	code, stdout, stderr := runCLI(t, "dataset", "synth", "--traces", "1", "--min-turns", "3", "--max-turns", "3", "-o", "-")
	if code != 0 || strings.Count(stdout, "\n") != 1 || !strings.Contains(stderr, "to stdout") {
		t.Errorf("-o -: exit %d, %d lines, stderr %q", code, strings.Count(stdout, "\n"), stderr)
	}
	for _, sub := range []string{"synth", "info"} {
		code, stdout, _ := runCLI(t, "dataset", sub, "--help")
		if code != 0 || !strings.Contains(stdout, "Examples:") {
			t.Errorf("dataset %s --help: exit %d, stdout:\n%s", sub, code, stdout)
		}
	}
}

// TestDatasetSynthMatchesPublicSynthetic checks that the default synth
// output is the corpus --public-dataset synthetic generates in memory.
func TestDatasetSynthMatchesPublicSynthetic(t *testing.T) {
	out := filepath.Join(t.TempDir(), "synth.jsonl")
	if code, _, stderr := runCLI(t, "dataset", "synth", "-o", out); code != 0 {
		t.Fatal(stderr)
	}
	stats := func(args ...string) string {
		code, stdout, stderr := runCLI(t, append([]string{"dataset", "info", "--json"}, args...)...)
		if code != 0 {
			t.Fatal(stderr)
		}
		var rep struct {
			Stats json.RawMessage `json:"stats"`
		}
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatal(err)
		}
		return string(rep.Stats)
	}
	if a, b := stats("--input-file", out), stats("--public-dataset", "synthetic"); a != b {
		t.Errorf("dataset synth -o FILE and --public-dataset synthetic differ:\n%s\n%s", a, b)
	}
	sub := filepath.Join(t.TempDir(), "sub.jsonl")
	if code, _, stderr := runCLI(t, "dataset", "synth", "--seed", "3", "--traces", "8", "--subagents", "--subagent-share", "0.3", "-o", sub); code != 0 {
		t.Fatal(stderr)
	}
	if a, b := stats("--input-file", sub), stats("--public-dataset", "synthetic:seed=3,traces=8,subagents=true,subagent-share=0.3"); a != b {
		t.Errorf("dataset synth --subagent-share and synthetic:subagent-share differ:\n%s\n%s", a, b)
	}
}
