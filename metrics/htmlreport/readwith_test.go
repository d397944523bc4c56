package htmlreport

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/plot"
)

// TestReadWithMatchesRead: a page built from a figure input read by the
// caller (a finishing run reads it once for the PNG and the page) is the
// page Read builds from the folder, and a figure warning that the
// aggregate's metadata.warnings already hold is shown once.
func TestReadWithMatchesRead(t *testing.T) {
	t.Parallel()
	dir := fixtureDir(t)
	want, _, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	in, pw := plot.ReadDir(dir)
	got, warnings := ReadWith(dir, in, FigureWarnings(pw))
	// Compared as the page embeds them (the figure holds NaN gaps).
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if len(warnings) > 0 || string(gj) != string(wj) {
		t.Fatalf("ReadWith differs from Read (warnings %v)", warnings)
	}

	// A record file that cannot be read: the warning is in the aggregate
	// (written after it was found) and shown once.
	in, pw = plot.ReadFiles(filepath.Join(dir, "missing.jsonl"), filepath.Join(dir, "server_metrics_export.json"), in.ProfilingStartNs)
	fw := FigureWarnings(pw)
	if len(fw) != 1 {
		t.Fatalf("figure warnings %q, want one for the missing record file", fw)
	}
	aggPath := filepath.Join(dir, metrics.FileAggregateJSON)
	b, err := os.ReadFile(aggPath)
	if err != nil {
		t.Fatal(err)
	}
	var agg map[string]any
	if err := json.Unmarshal(b, &agg); err != nil {
		t.Fatal(err)
	}
	agg["metadata"].(map[string]any)["warnings"] = []string{"an earlier warning", fw[0]}
	if b, err = json.Marshal(agg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(aggPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ = ReadWith(dir, in, fw)
	if !slices.Equal(got.Warnings, []string{"an earlier warning", fw[0]}) {
		t.Errorf("page warnings %q, want the aggregate's two, each once", got.Warnings)
	}
	if chartPanels(got) == 0 || chartPanels(got) >= chartPanels(want) {
		t.Errorf("%d panels with data without the records, %d with them: want the server panels only", chartPanels(got), chartPanels(want))
	}
}
