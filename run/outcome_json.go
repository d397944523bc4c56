package run

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// JSON is the run's outcome as one JSON object for scripts (the CLI's
// --output json): artifact_dir, exit_code, interrupted, submission_valid,
// problems (reason, message, fatal), warnings, and the aggregate as
// written in profile_export_aiperf.json (null when it is missing or not
// JSON). rename rewrites each problem's message (a CLI names its flags;
// nil leaves it).
func (o *Outcome) JSON(rename func(string) string) ([]byte, error) {
	if rename == nil {
		rename = func(s string) string { return s }
	}
	type problem struct {
		Reason  string `json:"reason,omitempty"`
		Message string `json:"message"`
		Fatal   bool   `json:"fatal"`
	}
	v := struct {
		ArtifactDir     string          `json:"artifact_dir"`
		ExitCode        int             `json:"exit_code"`
		Interrupted     bool            `json:"interrupted"`
		SubmissionValid bool            `json:"submission_valid"`
		Problems        []problem       `json:"problems"`
		Warnings        []string        `json:"warnings"`
		Aggregate       json.RawMessage `json:"aggregate"`
	}{ArtifactDir: o.Dir, ExitCode: o.ExitCode(), Interrupted: o.Interrupted, SubmissionValid: o.Verdict.Valid,
		Problems: []problem{}, Warnings: append(append([]string{}, o.Warnings...), o.LateWarnings...)}
	for _, p := range o.Problems {
		v.Problems = append(v.Problems, problem{Reason: p.Reason, Message: rename(p.Message), Fatal: o.Fatal(p)})
	}
	agg, err := os.ReadFile(filepath.Join(o.Dir, "profile_export_aiperf.json"))
	if err == nil && json.Valid(agg) {
		v.Aggregate = agg
	} else {
		v.Aggregate = json.RawMessage("null")
	}
	return json.Marshal(v)
}
