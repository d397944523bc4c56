package inferencex

import (
	"encoding/json"
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

// editAggregate rewrites the fixture copy's profile_export_aiperf.json
// through edit (on its decoded object).
func editAggregate(t *testing.T, dir string, edit func(doc map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, "profile_export_aiperf.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckCarriesEveryValidityReason: every reason of the run's verdict
// fails --check under its own name, unsafe_override included (also when
// only input_config says the locks were lifted), and the InferenceX result
// carries the verdict.
func TestCheckCarriesEveryValidityReason(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		edit    func(doc map[string]any)
		failing []string
	}{
		{"unsafe override", func(doc map[string]any) {
			md := doc["metadata"].(map[string]any)
			md["submission_valid"], md["submission_invalid_reasons"] = false, []any{"unsafe_override"}
			doc["input_config"].(map[string]any)["unsafe_override"] = true
		}, []string{"unsafe_override"}},
		{"two reasons", func(doc map[string]any) {
			md := doc["metadata"].(map[string]any)
			md["submission_valid"], md["submission_invalid_reasons"] = false, []any{"unsafe_override", "context_overflow_rate_exceeded"}
		}, []string{"unsafe_override", "context_overflow_rate_exceeded"}},
		{"only input_config says so", func(doc map[string]any) {
			doc["input_config"].(map[string]any)["unsafe_override"] = true
		}, []string{"unsafe_override"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyFixture(t)
			editAggregate(t, dir, c.edit)
			run, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			res := run.Check(CheckOptions{FailedRequestThreshold: 1})
			m := checkByName(res)
			if Passed(res) {
				t.Errorf("--check passed an invalid submission: %+v", res)
			}
			for _, name := range c.failing {
				if r, ok := m[name]; !ok || r.OK || !strings.Contains(r.Message, "not a valid submission") {
					t.Errorf("check %q: %+v (present %v), want a failure", name, r, ok)
				}
			}
			e, err := LoadEnv(MapLookup(fixtureEnv))
			if err != nil {
				t.Fatal(err)
			}
			x, err := run.InferenceX(Options{Env: e})
			if err != nil {
				t.Fatal(err)
			}
			doc := decodeResult(t, x)
			v, _ := doc["validity"].(map[string]any)
			if v == nil || v["submission_valid"] != false || len(v["submission_invalid_reasons"].([]any)) != len(c.failing) {
				t.Errorf("the InferenceX result's validity %v, want invalid with %v", doc["validity"], c.failing)
			}
		})
	}
	// The fixture itself is valid: the check says so.
	run, err := Load(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	if r := checkByName(run.Check(CheckOptions{FailedRequestThreshold: 1}))["submission_valid"]; !r.OK {
		t.Errorf("submission_valid on a valid run: %+v", r)
	}
}

// TestInferenceXFillsAndWarns: model comes from the run when MODEL is
// unset, and every field left empty is named in the warnings.
func TestInferenceXFillsAndWarns(t *testing.T) {
	t.Parallel()
	dir := copyFixture(t)
	editAggregate(t, dir, func(doc map[string]any) {
		ic := doc["input_config"].(map[string]any)
		ic["model_names"], ic["endpoint"] = []any{"Qwen/Qwen3-32B"}, "/v1/chat/completions" // agentperf's form
	})
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := LoadEnv(MapLookup(map[string]string{"CONC": "8"}))
	if err != nil {
		t.Fatal(err)
	}
	x, err := run.InferenceX(Options{Env: e})
	if err != nil {
		t.Fatal(err)
	}
	doc := decodeResult(t, x)
	if doc["model"] != "Qwen/Qwen3-32B" {
		t.Errorf("model %v, want the run's Qwen/Qwen3-32B", doc["model"])
	}
	ws := strings.Join(x.Warnings, "\n")
	for _, w := range []string{"MODEL not set: model is the run's served model (Qwen/Qwen3-32B)", "RUNNER_TYPE not set: hw is empty",
		"FRAMEWORK not set: framework is empty", "PRECISION not set: precision is empty", "IMAGE not set: image is empty",
		"InferenceX's defaults are used: ", "SPEC_DECODING=none", "EP_SIZE=1"} {
		if !strings.Contains(ws, w) {
			t.Errorf("warnings lack %q:\n%s", w, ws)
		}
	}
}
