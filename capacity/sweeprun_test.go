package capacity

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveTP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tp   int
		sim  bool
		env  string
		want int
	}{
		{tp: 4, env: "8", want: 4},     // the flag wins
		{tp: -1, want: -1},             // given: the caller refuses it
		{env: "8", sim: true, want: 8}, // $TP over the simulator's 1
		{sim: true, want: 1},           // the simulator models one GPU
		{env: "x", sim: true, want: 1}, // not a number: ignored
		{env: "0", want: 0},            // not positive: unknown
		{want: 0},                      // unknown: no Pareto point
	} {
		getenv := func(k string) string {
			if k == "TP" {
				return tc.env
			}
			return ""
		}
		if got := ResolveTP(tc.tp, tc.sim, getenv); got != tc.want {
			t.Errorf("ResolveTP(%d, %v, TP=%q) = %d, want %d", tc.tp, tc.sim, tc.env, got, tc.want)
		}
	}
}

// TestRunSweepOutcome: RunSweep writes the report and each point's
// InferenceX JSON, counts this sweep's points apart from an earlier
// sweep's, says each InferenceX warning once, and AllOK is false when a
// point failed.
func TestRunSweepOutcome(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var ran []int
	var logs []string
	logf := func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }
	noEnv := func(string) (string, bool) { return "", false }
	cfg := SweepRun{SweepConfig: SweepConfig{Dir: dir, Points: []int{2, 4}, Run: fakeRun(&ran), Logf: logf},
		Labels: SweepLabels{TP: 1}, LookupEnv: noEnv}
	if _, err := RunSweep(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	// Two points, the same environment: each InferenceX warning once.
	said, ix := map[string]int{}, 0
	for _, l := range logs {
		if _, w, ok := strings.Cut(l, "(every point's "+PointInferenceX+"): "); ok {
			said[w]++
			ix++
		}
	}
	if ix == 0 {
		t.Fatalf("no warning about InferenceX's variables, with none set; log:\n%s", strings.Join(logs, "\n"))
	}
	for l, n := range said {
		if n > 1 {
			t.Errorf("said %d times: %s", n, l)
		}
	}
	cfg.Points = []int{8}
	cfg.Run = func(ctx context.Context, c int, d string) error {
		if err := fakeRunInto(c, d); err != nil {
			return err
		}
		return fmt.Errorf("%w: exit 1", ErrPointFailed)
	}
	out, err := RunSweep(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Points) != 3 || out.Mine != 1 || !out.Reported || len(out.Table) == 0 || out.AllOK() {
		t.Fatalf("outcome: %d points, mine %d, reported %v, table %d bytes, AllOK %v; want 3, 1, true, some, false",
			len(out.Points), out.Mine, out.Reported, len(out.Table), out.AllOK())
	}
	for _, c := range []int{2, 4, 8} {
		if _, err := os.Stat(filepath.Join(dir, PointDir(c), PointInferenceX)); err != nil {
			t.Errorf("point %d: %v", c, err)
		}
	}
}
