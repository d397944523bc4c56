package timing

import (
	"github.com/agentperf/agentperf/internal/testshared"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
)

// sharedTraces returns the path of the shared 200-trace sample, skipping
// the test when it is absent.
func sharedTraces(t *testing.T) string {
	t.Helper()
	return testshared.Path(t, filepath.Join("traces", "kvct-200.jsonl.zst"))
}

// TestRealCorpus builds the scheduler's view of the shared sample corpus and
// replays a 10-minute, 64-lane schedule on a fake clock, checking the same
// invariants as TestScheduleProperties on real traces.
func TestRealCorpus(t *testing.T) {
	t.Parallel()
	if raceEnabled || testing.Short() {
		// Parsing the corpus dominates (seconds, ×20 under -race) and the
		// test is single-goroutine: nothing for the race detector to find.
		t.Skip("skipped under -race and -short")
	}
	traces, _, err := dataset.ReadPath(sharedTraces(t), dataset.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	infos := make([]TraceInfo, len(traces))
	usable, capped := 0, 0
	for i := range traces {
		infos[i] = FromTrace(&traces[i], DefaultDelayCap)
		tr, in := &traces[i], infos[i]
		if in.Turns != len(tr.Requests) {
			t.Fatalf("trace %s: %d turns for %d parent requests", tr.ID, in.Turns, len(tr.Requests))
		}
		if in.Turns >= 2 {
			usable++
		}
		for k := 1; k < in.Turns; k++ {
			d := in.Delays[k]
			if d < 0 || d > DefaultDelayCap {
				t.Fatalf("trace %s turn %d: delay %v outside [0, 60s]", tr.ID, k, d)
			}
			if d == DefaultDelayCap {
				capped++
			}
			// think_time, when recorded, is the gap (§1.9 legacy).
			if tt := tr.Requests[k].ThinkTime; !math.IsNaN(tt) && tt >= 0 && tt < 60 && math.Abs(d.Seconds()-tt) > 1e-9 {
				t.Fatalf("trace %s turn %d: delay %v, think_time %v", tr.ID, k, d, tt)
			}
		}
	}
	cfg := Config{Lanes: 64, Seed: 42, MinRatio: 0.25, MaxRatio: 0.75, Duration: 10 * time.Minute, RecycleScan: DefaultRecycleScan}
	sc, err := New(cfg, infos)
	if err != nil {
		t.Fatal(err)
	}
	if st := sc.Stats(); st.Usable != usable || st.Queue != max(usable-64, 0) {
		t.Fatalf("Stats = %+v, want %d usable traces and the rest queued", st, usable)
	}
	if err := checkSchedule(sc, infos, cfg, rand.New(rand.NewPCG(42, 42))); err != nil {
		t.Fatal(err)
	}
	st := sc.Stats()
	t.Logf("%d traces, %d usable, %d capped gaps; 10 min × 64 lanes: %d sessions, %d recycles, %d completed, %d overflows, %d live fallbacks",
		len(traces), usable, capped, st.Sessions, st.Recycles, st.Completed, st.Overflows, st.LiveFallbacks)
}
