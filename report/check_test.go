package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func checkByName(rs []CheckResult) map[string]CheckResult {
	m := map[string]CheckResult{}
	for _, r := range rs {
		m[r.Name] = r
	}
	return m
}

// copyFixture copies the two-engine fixture so a test can alter it.
func copyFixture(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(fixtureDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestCheck(t *testing.T) {
	t.Parallel()
	run, err := Load(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	// 1 failed of 5 completed = 20 %.
	res := run.Check(CheckOptions{FailedRequestThreshold: 0.25, RequiredServerMetricPrefix: "vllm:"})
	if !Passed(res) {
		t.Errorf("fixture fails at a 25 %% threshold: %+v", res)
	}
	res = run.Check(CheckOptions{FailedRequestThreshold: 0.10})
	m := checkByName(res)
	if Passed(res) || m["error_rate"].OK || !strings.Contains(m["error_rate"].Message, "1 of 5 completed requests failed (20.00 %; threshold 10.00 %)") {
		t.Errorf("error rate over the threshold: %+v", m["error_rate"])
	}
	if r := run.Check(CheckOptions{FailedRequestThreshold: 1, RequiredServerMetricPrefix: "sglang:"}); checkByName(r)["server_metrics_prefix"].OK {
		t.Error("a vLLM export passed the sglang: prefix gate")
	}

	// A stale aggregate JSON (it says 9 successful) and a lost record
	// (sent 9, 8 recorded) fail agentperf's invariants.
	dir := copyFixture(t)
	p := filepath.Join(dir, "profile_export_aiperf.json")
	b, _ := os.ReadFile(p)
	b = []byte(strings.Replace(strings.Replace(string(b), `"avg": 4`, `"avg": 9`, 1), `"sent": 8`, `"sent": 9`, 1))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	stale, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	m = checkByName(stale.Check(CheckOptions{FailedRequestThreshold: 1}))
	if m["aggregates_match_records"].OK || m["request_accounting"].OK || !strings.Contains(m["request_accounting"].Message, "1 requests are missing") {
		t.Errorf("stale aggregates: %+v / %+v", m["aggregates_match_records"], m["request_accounting"])
	}

	// No successful request at all: InferenceX's "completed > 0" holds
	// only through the error; with none either, it fails.
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "profile_export.jsonl"), nil, 0o644)
	os.WriteFile(filepath.Join(empty, "profile_export_aiperf.json"), []byte(`{"request_count":{"avg":0},"completed_request_count":{"avg":0}}`), 0o644)
	er, err := Load(empty)
	if err != nil {
		t.Fatal(err)
	}
	m = checkByName(er.Check(CheckOptions{FailedRequestThreshold: 0.1}))
	if m["completed_requests"].OK {
		t.Errorf("zero completed requests passed: %+v", m["completed_requests"])
	}
	// Without the aggregate JSON the validator cannot pass.
	os.Remove(filepath.Join(empty, "profile_export_aiperf.json"))
	er, _ = Load(empty)
	if m := checkByName(er.Check(CheckOptions{})); m["request_count"].OK {
		t.Error("missing aggregate JSON passed")
	}
}
