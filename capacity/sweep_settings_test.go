package capacity

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSweepResumesOnlyMatchingSettings (issue 34, case 11): a sweep
// reuses only the points an earlier sweep made with the same settings;
// the others run again (their folders kept), the log names each
// difference, and points of an earlier sweep with other settings are
// left out of what the table covers.
func TestSweepResumesOnlyMatchingSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var ran []int
	var log strings.Builder
	cfg := SweepConfig{Dir: dir, Points: []int{2, 4, 8}, Run: fakeRun(&ran), Settings: map[string]string{"--random-seed": "7", "--benchmark-duration": "1"},
		Logf: func(f string, a ...any) { fmt.Fprintf(&log, f+"\n", a...) }}
	if _, err := Sweep(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	// Another seed and duration over two of the points.
	ran = nil
	cfg.Points = []int{2, 4}
	cfg.Settings = map[string]string{"--random-seed": "8", "--benchmark-duration": "2"}
	pts, err := Sweep(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ran, []int{2, 4}) {
		t.Errorf("the sweep with other settings ran %v, want [2 4]: points made otherwise were reused", ran)
	}
	var concs []int
	for _, p := range pts {
		concs = append(concs, p.Concurrency)
	}
	if !slices.Equal(concs, []int{2, 4}) {
		t.Errorf("points for the table %v, want [2 4] (c8 was made with the other settings)", concs)
	}
	for _, want := range []string{"--benchmark-duration 1 → 2; --random-seed 7 → 8", "concurrency 2): the earlier sweep's point was made with other settings", "c8 (concurrency 8, from an earlier sweep and not in this one) was made with other settings"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
	for _, f := range []string{"c2.replaced/profile_export.jsonl", "c4.replaced/profile_export.jsonl", "c8/profile_export.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("a point of the first sweep was lost: %v", err)
		}
	}
	m, err := ReadManifest(dir)
	if err != nil || len(m) != 3 {
		t.Fatalf("manifest %+v (%v): want c2, c4 and the first sweep's c8", m, err)
	}
	// The same settings again: nothing runs.
	ran = nil
	if _, err := Sweep(context.Background(), cfg); err != nil || len(ran) != 0 {
		t.Errorf("a sweep over its own points ran %v (%v)", ran, err)
	}
	// A manifest from before settings were recorded: its points run again.
	ran = nil
	old := t.TempDir()
	first := SweepConfig{Dir: old, Points: []int{2}, Run: fakeRun(&ran)}
	if _, err := Sweep(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	first.Settings = map[string]string{"--random-seed": "7"}
	ran = nil
	if _, err := Sweep(context.Background(), first); err != nil || !slices.Equal(ran, []int{2}) {
		t.Errorf("a point without recorded settings was reused: ran %v (%v)", ran, err)
	}
}

func TestSettingsDiff(t *testing.T) {
	t.Parallel()
	a := map[string]string{"--random-seed": "7", "--url": "sim://", "corpus": "x"}
	if d := SettingsDiff(a, a); len(d) != 0 {
		t.Errorf("equal settings differ: %v", d)
	}
	b := map[string]string{"--random-seed": "8", "--url": "sim://", "$AIPERF_X": "1"}
	if d := SettingsDiff(a, b); !slices.Equal(d, []string{"$AIPERF_X (unset) → 1", "--random-seed 7 → 8", "corpus x → (unset)"}) {
		t.Errorf("SettingsDiff = %q", d)
	}
	if d := SettingsDiff(nil, b); len(d) != 1 || !strings.Contains(d[0], "without a record of its settings") {
		t.Errorf("unrecorded settings: %q", d)
	}
	if d := SettingsDiff(nil, nil); len(d) != 0 {
		t.Errorf("no settings on either side: %q", d)
	}
}
