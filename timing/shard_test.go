package timing_test

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	. "github.com/agentperf/agentperf/timing"
)

// hashServer answers a send after a latency that depends only on the
// send's identity (global lane, trace, stream, turn, pass), so that a
// lane sees the same responses whichever shard plays it.
func hashServer(x Send) (time.Duration, Outcome) {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d/%d/%d", x.Lane, x.Plan.TraceID, x.Stream, x.Turn, x.RecyclePass)
	v := h.Sum64()
	return time.Duration(200+v%3000) * time.Millisecond, Outcome{Failed: v%17 == 0}
}

// perLane renders log one line per send, grouped by global lane in send
// order; keep filters the sends.
func perLane(log []Served, keep func(Served) bool) string {
	byLane := map[int][]string{}
	var lanes []int
	for _, x := range log {
		if keep != nil && !keep(x) {
			continue
		}
		if _, ok := byLane[x.Lane]; !ok {
			lanes = append(lanes, x.Lane)
		}
		byLane[x.Lane] = append(byLane[x.Lane], x.String()+fmt.Sprintf(" sess%d", x.Session))
	}
	slices.Sort(lanes)
	var b strings.Builder
	for _, l := range lanes {
		for _, line := range byLane[l] {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TestShardsReplayTheUnshardedLanes: a run dealt to N shards (lane i on
// shard i mod N), driven on one clock with the barriers and the profiling
// alignment combined, plays every global lane exactly as the unsharded
// run does: the same start state, primers, session numbers, recycle
// passes and (v1.0) recycled trees, send for send. The legacy generations
// recycle from a queue that follows completion order, which each shard
// keeps for itself: their start states and warmups are the same, and
// each lane's first profiling send.
func TestShardsReplayTheUnshardedLanes(t *testing.T) {
	t.Parallel()
	for iter := range 12 {
		traces := dataset.Synthesize(dataset.SynthOptions{Seed: int64(iter), Traces: 2 + iter%5, Subagents: true, MinTurns: 3, MaxTurns: 10, TimeScale: 0.2})
		for _, gen := range []Generation{V02, V03, V10} {
			for _, shards := range []int{1, 2, 3} {
				name := fmt.Sprintf("iter %d %s %d shards", iter, gen, shards)
				plans := func() []*Plan { return plansOf(gen, traces) }
				cfg := Config{Generation: gen, Lanes: 3 + iter%6, Seed: int64(iter), StartMinRatio: 0.25, StartMaxRatio: 0.75, Duration: 120 * S}
				if gen == V10 {
					cfg.TraceIdleCap = 7 * S
					if iter%3 == 1 {
						cfg.WarmupRequestsPerLane = 2
					}
				}
				whole, err := New(cfg, plans())
				if err != nil {
					continue // no usable trace
				}
				want, wantStart := Drive(t, whole, T0, hashServer)
				var scs []*Schedule
				for i := range shards {
					c := cfg
					c.Shard = Shard{Index: i, Count: shards}
					sc, err := New(c, plans())
					if err != nil {
						t.Fatalf("%s: shard %d: %v", name, i, err)
					}
					scs = append(scs, sc)
				}
				got, gotStart := DriveShards(t, scs, T0, hashServer)
				if !gotStart.Equal(wantStart) {
					t.Fatalf("%s: profiling started at %s, want %s", name, FmtT(gotStart), FmtT(wantStart))
				}
				keep := func(Served) bool { return true }
				if gen != V10 {
					first := map[int]bool{}
					keep = func(x Served) bool {
						if x.Phase == Warmup {
							return true
						}
						if first[x.Lane] {
							return false
						}
						first[x.Lane] = true
						return true
					}
				}
				// keep has state: a fresh one per log.
				w := perLane(want, keep)
				if gen != V10 {
					first := map[int]bool{}
					keep = func(x Served) bool {
						if x.Phase == Warmup {
							return true
						}
						if first[x.Lane] {
							return false
						}
						first[x.Lane] = true
						return true
					}
				}
				if g := perLane(got, keep); g != w {
					t.Fatalf("%s: the shards' lanes differ from the unsharded run's:\n%s", name, DiffLines(g, w))
				}
				var sent [2]int
				for _, sc := range scs {
					st := sc.Stats()
					sent[0] += st.Sent[0]
					sent[1] += st.Sent[1]
				}
				if ws := whole.Stats(); gen == V10 && sent != ws.Sent {
					t.Fatalf("%s: the shards sent %v, the unsharded run %v", name, sent, ws.Sent)
				}
			}
		}
	}
}

// TestShardValidate: a shard is 0 ≤ index < count; a shard with no lane
// is refused.
func TestShardValidate(t *testing.T) {
	t.Parallel()
	a := traceOf("A", []dataset.Request{req(0, 1), req(1, 1), req(2, 1)})
	for _, c := range []struct {
		sh   Shard
		ok   bool
		name string
	}{
		{Shard{}, true, "zero"},
		{Shard{0, 1}, true, "0/1"},
		{Shard{1, 2}, true, "1/2"},
		{Shard{2, 2}, false, "index = count"},
		{Shard{-1, 2}, false, "negative"},
		{Shard{3, 4}, false, "no lane (3 lanes)"},
	} {
		_, err := New(Config{Generation: V10, Lanes: 3, StartMaxRatio: 0.5, Shard: c.sh}, plansOf(V10, []dataset.Trace{a}))
		if (err == nil) != c.ok {
			t.Errorf("%s: New error %v, want ok=%v", c.name, err, c.ok)
		}
	}
}
