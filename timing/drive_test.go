package timing

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const s = time.Second

// served is one send as the fake server saw it.
type served struct {
	Send
	Done time.Time
	Out  Outcome
}

// String renders a send compactly for exact-schedule comparisons:
// "lane/trace:stream.turn @+sec phase [new] [pass] [tok]".
func (x served) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "L%d %s s%d.%d @%s", x.Lane, x.Plan.TraceID, x.Stream, x.Turn, fmtT(x.At))
	if x.Phase == Warmup {
		b.WriteString(" warm")
	}
	if x.NewSession {
		fmt.Fprintf(&b, " new#%d", x.Session)
	}
	if x.NewSession && x.RecyclePass > 0 {
		fmt.Fprintf(&b, " pass%d", x.RecyclePass)
	}
	if x.MaxTokens > 0 {
		fmt.Fprintf(&b, " tok%d", x.MaxTokens)
	}
	return b.String()
}

func fmtT(t time.Time) string {
	d := t.Sub(t0)
	if d%s == 0 {
		return fmt.Sprintf("%d", d/s)
	}
	return fmt.Sprintf("%g", d.Seconds())
}

// server decides how long a send takes and how it ends.
type server func(Send) (time.Duration, Outcome)

// constServer answers every request after d, successfully.
func constServer(d time.Duration) server {
	return func(Send) (time.Duration, Outcome) { return d, Outcome{} }
}

// completion is a pending response in the driver.
type completion struct {
	at   time.Time
	snd  Send
	out  Outcome
	idx  int // index into the log
	lane *Lane
}

// drive runs sc on a fake clock from start against srv, the way the engine
// does: release what is due on every lane, wait for the earliest
// completion or wake-up, complete, repeat; the warmup barrier; then
// profiling until every lane is done. It returns every send in release
// order with its completion, and the profiling start.
func drive(t testing.TB, sc *Schedule, start time.Time, srv server) (log []served, profStart time.Time) {
	t.Helper()
	return driveShards(t, []*Schedule{sc}, start, srv)
}

// driveShards drives the schedules of the shards of one run together, on
// one fake clock, as coordinated shards do: each barrier waits for every
// lane of every shard, and profiling starts on every shard at the same
// instant with the alignment combined over the shards.
func driveShards(t testing.TB, scs []*Schedule, start time.Time, srv server) (log []served, profStart time.Time) {
	t.Helper()
	now := start
	var pending []completion
	phase := Warmup
	accel := false
	var lanes []*Lane
	for _, sc := range scs {
		sc.StartWarmup(now)
		for i := 0; i < sc.Lanes(); i++ {
			lanes = append(lanes, sc.Lane(i))
		}
	}
	for step := 0; ; step++ {
		if step > 1_000_000 {
			t.Fatalf("drive: no end after %d steps", step)
		}
		for _, l := range lanes {
			sends := l.Due(now, nil)
			for _, snd := range sends {
				lat, out := srv(snd)
				log = append(log, served{Send: snd, Done: now.Add(lat), Out: out})
				pending = append(pending, completion{at: now.Add(lat), snd: snd, out: out, idx: len(log) - 1, lane: l})
			}
			// The engine waits for NextWake: a wake-up at or before now
			// with nothing released would be a busy loop.
			if w, ok := l.NextWake(); ok && !w.After(now) && len(sends) == 0 {
				t.Fatalf("drive: lane %d released nothing at %s but wants to wake at %s (a busy loop)", l.Index(), fmtT(now), fmtT(w))
			}
		}
		allDone := true
		for _, l := range lanes {
			allDone = allDone && l.PhaseDone()
		}
		if allDone && len(pending) == 0 {
			if phase == Profiling {
				return log, profStart
			}
			if !accel && scs[0].HasAcceleratedWarmup() {
				accel = true
				for _, sc := range scs {
					sc.StartAcceleratedWarmup(now)
				}
				continue
			}
			phase, profStart = Profiling, now
			var a Alignment
			for _, sc := range scs {
				a = a.Combine(sc.PrepareProfiling())
			}
			for _, sc := range scs {
				sc.StartProfilingAligned(now, a)
			}
			continue
		}
		next, ok := time.Time{}, false
		for _, c := range pending {
			if !ok || c.at.Before(next) {
				next, ok = c.at, true
			}
		}
		for _, l := range lanes {
			if w, wok := l.NextWake(); wok && (!ok || w.Before(next)) {
				next, ok = w, true
			}
		}
		if !ok {
			t.Fatalf("drive: stuck at %s in %s: nothing pending, lanes not done", fmtT(now), phase)
		}
		if next.After(now) {
			now = next
		}
		// Complete what finishes now, in a fixed order.
		sort.SliceStable(pending, func(a, b int) bool { return pending[a].at.Before(pending[b].at) })
		k := 0
		for k < len(pending) && !pending[k].at.After(now) {
			k++
		}
		done := pending[:k:k]
		pending = pending[k:]
		sort.SliceStable(done, func(a, b int) bool {
			if done[a].snd.Lane != done[b].snd.Lane {
				return done[a].snd.Lane < done[b].snd.Lane
			}
			return done[a].idx < done[b].idx
		})
		for _, c := range done {
			c.lane.Complete(c.snd.ID(), c.out, now)
		}
	}
}

// render formats sends one per line.
func render(log []served) string {
	var b strings.Builder
	for _, x := range log {
		b.WriteString(x.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// diffLines reports the first differing line of two renderings.
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got  %q\n want %q\n\nfull got:\n%s", i+1, gl, wl, got)
		}
	}
	return ""
}

func checkSchedule(t *testing.T, log []served, want string) {
	t.Helper()
	want = strings.TrimLeft(want, "\n")
	if d := diffLines(render(log), want); d != "" {
		t.Fatal(d)
	}
}

// withTurnStart is g starting every lane at a sampled turn k_i instead of
// a t* snapshot (as V03Early does V03).
func withTurnStart(g Generation) Generation {
	g.Start = StartTurn
	return g
}
