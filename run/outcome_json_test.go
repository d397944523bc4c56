package run

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestOutcomeJSON: the --output json object carries the problems with
// their messages renamed, the warnings, and the aggregate as written
// (null without one).
func TestOutcomeJSON(t *testing.T) {
	dir := t.TempDir()
	o := &Outcome{Dir: dir, Warnings: []string{"w1"}, LateWarnings: []string{"w2"},
		Problems: []Problem{{Kind: ProblemInvalid, Reason: "r", Message: "Config.URL is bad"}}}
	rename := func(s string) string { return "renamed: " + s }
	var got struct {
		ArtifactDir string `json:"artifact_dir"`
		Problems    []struct {
			Reason, Message string
		} `json:"problems"`
		Warnings  []string        `json:"warnings"`
		Aggregate json.RawMessage `json:"aggregate"`
	}
	b, err := o.JSON(rename)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.ArtifactDir != dir || len(got.Problems) != 1 || got.Problems[0].Message != "renamed: Config.URL is bad" || got.Problems[0].Reason != "r" ||
		len(got.Warnings) != 2 || string(got.Aggregate) != "null" {
		t.Errorf("JSON = %s", b)
	}
	if err := os.WriteFile(filepath.Join(dir, "profile_export_aiperf.json"), []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ = o.JSON(nil)
	if err := json.Unmarshal(b, &got); err != nil || string(got.Aggregate) != `{"a":1}` || got.Problems[0].Message != "Config.URL is bad" {
		t.Errorf("with an aggregate and no rename: %s (%v)", b, err)
	}
}
