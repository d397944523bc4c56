package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpGoesToStdout: help that was asked for goes to stdout, so that
// `agentperf profile --help | grep seed` finds the flag; nothing goes to
// stderr.
func TestHelpGoesToStdout(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"profile", "--help"}, "--random-seed"},
		{[]string{"profile", "-h"}, "--benchmark-duration"},
		{[]string{"report", "--help"}, "--check"},
		{[]string{"sim", "--help"}, "--kv-capacity-tokens"},
		{[]string{"dataset", "info", "--help"}, "--public-dataset"},
		{[]string{"dataset", "download", "--help"}, "--revision"},
		{[]string{"tokenizer", "download", "--help"}, "--revision"},
		{[]string{"version", "--help"}, "Usage:"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, c.args...)
			if code != exitOK || !strings.Contains(out, c.want) || errOut != "" {
				t.Errorf("exit %d, stdout has %q: %v, stderr %q", code, c.want, strings.Contains(out, c.want), errOut)
			}
		})
	}
	// A usage error still prints its usage to stderr, not stdout.
	code, out, errOut := runCLI(t, "dataset", "cache")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "Usage:") {
		t.Errorf("dataset cache without an action: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestRangeErrorsSayTheRange: a numeric flag given outside its range is
// refused with the range, never with "is required".
func TestRangeErrorsSayTheRange(t *testing.T) {
	clearAIPerfEnv(t)
	base := []string{"profile", "--url", "sim://", "--public-dataset", "synthetic:traces=4", "--model", "demo", "--concurrency", "2",
		"--output-artifact-dir", t.TempDir(), "--ui-type", "none"}
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--benchmark-duration", "-5"}, "--benchmark-duration -5: out of range: want seconds > 0"},
		{[]string{"--benchmark-duration", "0"}, "--benchmark-duration 0: out of range: want seconds > 0"},
		{[]string{"--benchmark-duration", "10", "--benchmark-grace-period", "-1"}, "--benchmark-grace-period -1: out of range: want seconds ≥ 0"},
		{[]string{"--benchmark-duration", "10", "--trajectory-start-max-ratio", "1.5"}, "--trajectory-start-max-ratio 1.5: out of range: want 0 to 1"},
		{[]string{"--benchmark-duration", "10", "--stats-interval", "NaN"}, "--stats-interval NaN: out of range"},
		{[]string{"--benchmark-duration", "10", "--request-timeout-seconds", "-3"}, "--request-timeout-seconds -3: out of range: want seconds ≥ 0 (0 = no timeout)"},
		{[]string{"--benchmark-duration", "10", "--failed-request-threshold", "2"}, "--failed-request-threshold 2: want a fraction in (0, 1], e.g. 0.10 for 10% (0 = off)"},
	} {
		code, _, errOut := runCLI(t, append(append([]string(nil), base...), c.flags...)...)
		if code != exitUsage || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "is required") {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", c.flags, code, exitUsage, c.want, errOut)
		}
	}
}

// TestEnumerationsSuggest: a mistyped value of a flag with a fixed set of
// values gets "did you mean", as a mistyped flag name does.
func TestEnumerationsSuggest(t *testing.T) {
	clearAIPerfEnv(t)
	base := []string{"profile", "--url", "sim://", "--model", "demo", "--concurrency", "2", "--benchmark-duration", "1",
		"--output-artifact-dir", t.TempDir()}
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--public-dataset", "synthetc"}, `unknown public dataset "synthetc" (did you mean "synthetic"?)`},
		{[]string{"--public-dataset", "synthetic", "--ui-type", "dashbord"}, `(did you mean "dashboard"?)`},
		{[]string{"--public-dataset", "synthetic", "--export-level", "record"}, `(did you mean "records"?)`},
		{[]string{"--public-dataset", "synthetic", "--cache-bust", "system_prefx"}, `(did you mean "system_prefix"?)`},
		{[]string{"--public-dataset", "synthetic", "--agentx-generation", "v1.1"}, `(did you mean "v1.0"?)`},
		{[]string{"--public-dataset", "synthetic", "--scenario", "inferencex-agentx-mpv"}, `(did you mean "inferencex-agentx-mvp"?)`},
	} {
		code, _, errOut := runCLI(t, append(append([]string(nil), base...), c.flags...)...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", c.flags, code, exitUsage, c.want, errOut)
		}
	}
	if code, _, errOut := runCLI(t, "report", "--format", "inferencx", t.TempDir()); code != exitUsage || !strings.Contains(errOut, `(did you mean "inferencex"?)`) {
		t.Errorf("report --format inferencx: exit %d:\n%s", code, errOut)
	}
}

// TestURLEchoedAsTyped: the URL in the log and in the artifacts is the one
// typed ("sim://", not "sim:"), with its password masked.
func TestURLEchoedAsTyped(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	code, _, errOut := runCLI(t, "profile", "--url", "sim://", "--public-dataset", "synthetic:traces=4", "--model", "demo",
		"--concurrency", "2", "--benchmark-duration", "1", "--benchmark-grace-period", "0", "--output-artifact-dir", dir, "--ui-type", "none", "--no-plot")
	if code == exitUsage { // the default sim may complete nothing in 1 s (exit 1): the artifacts are written
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	data, err := os.ReadFile(filepath.Join(dir, "profile_export_aiperf.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"url": "sim://"`) {
		t.Errorf("profile_export_aiperf.json does not carry the URL as typed (sim://)")
	}
	if !strings.Contains(errOut, "--url sim:// ") {
		t.Errorf("the log does not echo --url sim://:\n%s", errOut)
	}
	code, _, errOut = runCLI(t, "profile", "--url", "ftp://bob:hunter2@example.com", "--public-dataset", "synthetic", "--model", "demo",
		"--concurrency", "2", "--benchmark-duration", "1", "--output-artifact-dir", t.TempDir())
	if code != exitUsage || strings.Contains(errOut, "hunter2") || !strings.Contains(errOut, "ftp://bob:xxxxx@example.com") {
		t.Errorf("a bad URL with a password: exit %d, want it echoed masked:\n%s", code, errOut)
	}
}

// TestReportCheckFailsOnUnsafeOverride: `report --check` on a run made
// with --unsafe-override fails, naming unsafe_override; `report --format
// inferencex` carries the verdict and the run's model.
func TestReportCheckFailsOnUnsafeOverride(t *testing.T) {
	src := filepath.Join("..", "..", "analysis", "inferencex", "testdata", "two-engine")
	dir := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "profile_export_aiperf.json" {
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			md, _ := doc["metadata"].(map[string]any)
			ic, _ := doc["input_config"].(map[string]any)
			if md == nil || ic == nil {
				t.Fatal("the fixture's aggregate JSON has no metadata or input_config")
			}
			md["submission_valid"], md["submission_invalid_reasons"] = false, []any{"unsafe_override"}
			ic["unsafe_override"], ic["model_names"] = true, []any{"Qwen/Qwen3-32B"}
			if b, err = json.Marshal(doc); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCLI(t, "report", "--check", "--failed-request-threshold", "1", dir)
	if code != exitRunFailed || !strings.Contains(out, "FAIL unsafe_override") {
		t.Errorf("report --check: exit %d, want %d with a failing unsafe_override check:\n%s%s", code, exitRunFailed, out, errOut)
	}
	code, out, errOut = runCLI(t, "report", "--format", "inferencex", dir)
	if code != exitOK || !strings.Contains(out, `"submission_invalid_reasons": [`) || !strings.Contains(out, `"unsafe_override"`) ||
		!strings.Contains(out, `"model": "Qwen/Qwen3-32B"`) || !strings.Contains(errOut, "MODEL not set: model is the run's served model") {
		t.Errorf("report --format inferencex: exit %d:\n%s\n%s", code, out, errOut)
	}
}
