package timing

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const s = time.Second

// info builds a TraceInfo whose gap before turn k is gaps[k-1].
func info(id string, gaps ...time.Duration) TraceInfo {
	return TraceInfo{ID: id, Turns: len(gaps) + 1, Delays: append([]time.Duration{0}, gaps...)}
}

func mustNew(t *testing.T, cfg Config, traces []TraceInfo) *Scheduler {
	t.Helper()
	sc, err := New(cfg, traces)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestSampleStartTurnGolden(t *testing.T) {
	t.Parallel()
	// Pinned draws for seed 42, ratios 0.25/0.75: a change here changes
	// every run's trajectories and must be deliberate.
	for _, c := range []struct {
		id      string
		lane, n int
		want    int
	}{
		{"trace-a", 0, 10, 7},
		{"trace-a", 1, 10, 4},
		{"trace-a", 2, 10, 7},
		{"trace-b", 0, 40, 23},
		{"trace-b", 7, 40, 21},
		{"c", 3, 3, 1},
		{"c", 0, 4, 2},
		{"long", 5, 200, 144},
	} {
		if got := SampleStartTurn(42, c.id, c.lane, c.n, 0.25, 0.75); got != c.want {
			t.Errorf("SampleStartTurn(42, %q, lane %d, n %d) = %d, want %d", c.id, c.lane, c.n, got, c.want)
		}
	}
}

func TestSampleStartTurnBounds(t *testing.T) {
	t.Parallel()
	for _, r := range []struct{ lo, hi float64 }{{0.25, 0.75}, {0, 1}, {0, 0.7}, {0.5, 0.5}, {0.9, 1}, {1, 1}, {0, 0}} {
		for n := 0; n <= 120; n++ {
			kmin := min(int(r.lo*float64(n)), n-2)
			kmax := min(int(r.hi*float64(n)), n-2)
			if kmin > kmax {
				kmin = kmax
			}
			seen := map[int]bool{}
			for lane := 0; lane < 60; lane++ {
				k := SampleStartTurn(7, "t", lane, n, r.lo, r.hi)
				switch {
				case n <= 2:
					if k != 0 {
						t.Fatalf("n=%d ratios %v: k=%d, want 0", n, r, k)
					}
				case k < kmin || k > kmax || k > n-2:
					t.Fatalf("n=%d ratios %v lane %d: k=%d outside [%d,%d]", n, r, lane, k, kmin, kmax)
				}
				seen[k] = true
			}
			// Small ranges are fully covered by 60 draws.
			if n > 2 && kmax-kmin < 4 && len(seen) != kmax-kmin+1 {
				t.Errorf("n=%d ratios %v: 60 lanes drew only %v from [%d,%d]", n, r, seen, kmin, kmax)
			}
		}
	}
	// The key includes the seed and the trace id.
	diff := 0
	for lane := 0; lane < 50; lane++ {
		if SampleStartTurn(1, "x", lane, 1000, 0, 1) != SampleStartTurn(2, "x", lane, 1000, 0, 1) {
			diff++
		}
		if SampleStartTurn(1, "x", lane, 1000, 0, 1) != SampleStartTurn(1, "y", lane, 1000, 0, 1) {
			diff++
		}
	}
	if diff < 90 {
		t.Errorf("seed and trace id barely change k: %d of 100 draws differ", diff)
	}
}

func TestFromTrace(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	req := func(tm, think float64) dataset.Request { return dataset.Request{T: tm, ThinkTime: think} }
	tr := &dataset.Trace{ID: "tr", Requests: []dataset.Request{
		req(0, nan),      // turn 0: no delay
		req(10, 2.5),     // think_time wins over the 10 s start difference
		req(15, nan),     // no think_time: t difference 5 s
		req(200, 100),    // think_time 100 s capped at 60 s
		req(190, nan),    // negative t difference clamped to 0
		req(191, -3),     // negative think_time clamped to 0
		req(nan, nan),    // both missing: 0
		req(300, 0.0001), // sub-millisecond kept exactly
	}, Subagents: []dataset.Subagent{{After: 1, Requests: []dataset.Request{req(11, 0)}}}}
	got := FromTrace(tr, DefaultDelayCap)
	want := []time.Duration{0, 2500 * time.Millisecond, 5 * s, 60 * s, 0, 0, 0, 100 * time.Microsecond}
	if got.ID != "tr" || got.Turns != 8 || fmt.Sprint(got.Delays) != fmt.Sprint(want) {
		t.Fatalf("FromTrace = %+v, want 8 turns (subagents skipped) with delays %v", got, want)
	}
	uncapped := FromTrace(tr, 0)
	if uncapped.Delays[3] != 100*s {
		t.Errorf("cap 0: delay %v, want the uncapped 100s", uncapped.Delays[3])
	}
	huge := FromTrace(&dataset.Trace{Requests: []dataset.Request{req(0, nan), req(1, math.Inf(1))}}, 0)
	if huge.Delays[1] != time.Duration(math.MaxInt64) {
		t.Errorf("infinite think_time without cap: %v, want the largest Duration", huge.Delays[1])
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	ok := []TraceInfo{info("a", s)}
	for _, c := range []struct {
		name   string
		cfg    Config
		traces []TraceInfo
		want   string
	}{
		{"no lanes", Config{Lanes: 0, MaxRatio: 1}, ok, "--concurrency"},
		{"ratio above 1", Config{Lanes: 1, MaxRatio: 1.5}, ok, "[0, 1]"},
		{"NaN ratio", Config{Lanes: 1, MinRatio: math.NaN(), MaxRatio: 1}, ok, "[0, 1]"},
		{"min above max", Config{Lanes: 1, MinRatio: 0.8, MaxRatio: 0.2}, ok, "swap"},
		{"negative duration", Config{Lanes: 1, Duration: -s}, ok, "negative"},
		{"no traces", Config{Lanes: 1}, nil, "no usable trace"},
		{"single-turn traces only", Config{Lanes: 1}, []TraceInfo{info("a"), info("b")}, "no usable trace"},
		{"bad delays", Config{Lanes: 1}, []TraceInfo{{ID: "a", Turns: 3, Delays: []time.Duration{0}}}, "FromTrace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.cfg, c.traces)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New error = %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

// fixedK is a config whose start turn is exactly int(0.5·n) (n == 2 ⇒ 0).
func fixedK(lanes int, d time.Duration) Config {
	return Config{Lanes: lanes, MinRatio: 0.5, MaxRatio: 0.5, Duration: d}
}

func TestWarmupProfilingHandoff(t *testing.T) {
	t.Parallel()
	traces := []TraceInfo{info("a", s, 2*s, 3*s, 4*s), info("solo"), info("b", 9*s)}
	sc := mustNew(t, fixedK(2, 0), traces)
	w := sc.Warmup()
	wantW := []Send{
		{Lane: 0, Trace: 0, Turn: 2, Phase: Warmup, Session: 0, NewSession: true},
		{Lane: 1, Trace: 2, Turn: 0, Phase: Warmup, Session: 1, NewSession: true},
	}
	if fmt.Sprint(w) != fmt.Sprint(wantW) {
		t.Fatalf("Warmup =\n%v\nwant\n%v", w, wantW)
	}
	if sc.StartTurn(0) != 2 || sc.StartTurn(1) != 0 || sc.InitialTrace(1) != 2 {
		t.Errorf("StartTurn = %d,%d InitialTrace(1) = %d; want 2,0 and 2", sc.StartTurn(0), sc.StartTurn(1), sc.InitialTrace(1))
	}
	if !sc.Deadline().IsZero() {
		t.Errorf("Deadline before profiling = %v, want zero", sc.Deadline())
	}
	p := sc.StartProfiling(at(100 * s))
	wantP := []Send{
		{Lane: 0, Trace: 0, Turn: 3, At: at(100 * s), Phase: Profiling, Session: 0},
		{Lane: 1, Trace: 2, Turn: 1, At: at(100 * s), Phase: Profiling, Session: 1},
	}
	if fmt.Sprint(p) != fmt.Sprint(wantP) {
		t.Fatalf("StartProfiling =\n%v\nwant\n%v", p, wantP)
	}
	// The next turn is due the recorded gap after the response ended.
	got, ok := sc.Next(0, Outcome{}, at(107*s))
	want := Send{Lane: 0, Trace: 0, Turn: 4, At: at(111 * s), Phase: Profiling, Session: 0}
	if !ok || got != want {
		t.Fatalf("Next = %v %v, want %v", got, ok, want)
	}
}

func TestStartProfilingRecyclesWhenWarmupWasLastTurn(t *testing.T) {
	t.Parallel()
	// k_i is clamped to n−2, so k_i+1 < n for every sampled start; force
	// the edge by moving the lane to the last turn.
	sc := mustNew(t, fixedK(1, 0), []TraceInfo{info("a", s), info("b", s)})
	sc.Warmup()
	sc.lanes[0].turn = 1
	p := sc.StartProfiling(at(0))
	want := []Send{{Lane: 0, Trace: 1, Turn: 0, At: at(0), Phase: Profiling, Session: 1, NewSession: true}}
	if fmt.Sprint(p) != fmt.Sprint(want) {
		t.Fatalf("StartProfiling = %v, want a recycle %v", p, want)
	}
}

func TestRecycleOrderExact(t *testing.T) {
	t.Parallel()
	traces := []TraceInfo{
		info("A", 5*s, 7*s),       // 3 turns, k=1
		info("B", 3*s),            // 2 turns, k=0
		info("C", 1*s, 2*s, 30*s), // 4 turns
		info("D"),                 // unusable
		info("E", 4*s),            // 2 turns
	}
	sc := mustNew(t, fixedK(2, 40*s), traces)
	const A, B, C, E = 0, 1, 2, 4
	w := sc.Warmup()
	if w[0].Trace != A || w[0].Turn != 1 || w[1].Trace != B || w[1].Turn != 0 {
		t.Fatalf("warmup = %v", w)
	}
	p := sc.StartProfiling(t0)
	if p[0] != (Send{Lane: 0, Trace: A, Turn: 2, At: t0, Phase: Profiling, Session: 0}) ||
		p[1] != (Send{Lane: 1, Trace: B, Turn: 1, At: t0, Phase: Profiling, Session: 1}) {
		t.Fatalf("profiling start = %v", p)
	}
	if !sc.Deadline().Equal(at(40 * s)) {
		t.Fatalf("Deadline = %v", sc.Deadline())
	}
	type step struct {
		lane int
		out  Outcome
		now  time.Duration
		want Send
		ok   bool
	}
	rec := func(lane, tr, sess, pass int, now time.Duration) Send {
		return Send{Lane: lane, Trace: tr, Turn: 0, At: at(now), Phase: Profiling, Session: sess, NewSession: true, RecyclePass: pass}
	}
	turn := func(lane, tr, tn, sess int, due time.Duration) Send {
		return Send{Lane: lane, Trace: tr, Turn: tn, At: at(due), Phase: Profiling, Session: sess}
	}
	steps := []step{
		// B done → queue [C E B]; C is the head and not live.
		{1, Outcome{}, 1 * s, rec(1, C, 2, 0, 1*s), true},
		// A done → queue [E B A] → E.
		{0, Outcome{}, 2 * s, rec(0, E, 3, 0, 2*s), true},
		{1, Outcome{}, 3 * s, turn(1, C, 1, 2, 4*s), true},
		// Overflow on E's first turn ends the session → queue [B A E] → B,
		// its second session (pass 1).
		{0, Outcome{Overflow: true}, 5 * s, rec(0, B, 4, 1, 5*s), true},
		// A failed request does not end the session.
		{1, Outcome{Failed: true}, 6 * s, turn(1, C, 2, 2, 8*s), true},
		{0, Outcome{}, 7 * s, turn(0, B, 1, 4, 10*s), true},
		{1, Outcome{}, 9 * s, turn(1, C, 3, 2, 39*s), true},
		// B done → queue [A E B] → A (pass 1).
		{0, Outcome{}, 11 * s, rec(0, A, 5, 1, 11*s), true},
		{0, Outcome{}, 12 * s, turn(0, A, 1, 5, 17*s), true},
		{0, Outcome{}, 18 * s, turn(0, A, 2, 5, 25*s), true},
		// A done → queue [E B A] → E (pass 1).
		{0, Outcome{}, 26 * s, rec(0, E, 6, 1, 26*s), true},
		// E's turn 1 would be due exactly at the deadline: the lane is done.
		{0, Outcome{}, 36 * s, Send{}, false},
		{0, Outcome{}, 50 * s, Send{}, false},
		// C's last turn finished after the deadline: no new session.
		{1, Outcome{}, 41 * s, Send{}, false},
	}
	for i, st := range steps {
		got, ok := sc.Next(st.lane, st.out, at(st.now))
		if ok != st.ok || got != st.want {
			t.Fatalf("step %d: Next(lane %d, %+v, +%v) = %v %v, want %v %v", i, st.lane, st.out, st.now, got, ok, st.want, st.ok)
		}
	}
	want := Stats{Traces: 5, Usable: 4, Sessions: 7, Recycles: 5, Overflows: 1, Completed: 5, Queue: 2, LanesDone: 2}
	if got := sc.Stats(); got != want {
		t.Errorf("Stats = %+v\nwant    %+v", got, want)
	}
}

func TestWrapFill(t *testing.T) {
	t.Parallel()
	traces := []TraceInfo{info("x", s, s, s, s, s, s, s), info("one"), info("y", s, s, s, s, s, s, s, s, s)}
	sc := mustNew(t, Config{Lanes: 5, Seed: 3, MinRatio: 0.25, MaxRatio: 0.75}, traces)
	w := sc.Warmup()
	wantTrace := []int{0, 2, 0, 2, 0}
	wantPass := []int{0, 0, 1, 1, 2}
	for i, snd := range w {
		id := traces[wantTrace[i]].ID
		if snd.Trace != wantTrace[i] || snd.RecyclePass != wantPass[i] || snd.Session != i || !snd.NewSession ||
			snd.Turn != SampleStartTurn(3, id, i, traces[wantTrace[i]].Turns, 0.25, 0.75) {
			t.Errorf("lane %d warmup = %+v, want trace %d pass %d session %d at its sampled k", i, snd, wantTrace[i], wantPass[i], i)
		}
	}
	if st := sc.Stats(); st.WrapFilled != 3 || st.Queue != 0 {
		t.Errorf("Stats = %+v, want 3 wrap-filled lanes and an empty queue", st)
	}
}

func TestRecyclePrefersTraceNotLive(t *testing.T) {
	t.Parallel()
	// Under the FIFO rules the queue can only hold a live trace when lanes
	// outnumber traces; set the state up directly to test the scan.
	traces := []TraceInfo{info("a", s), info("b", s), info("c", s), info("d", s)}
	for _, c := range []struct {
		name      string
		scan      int
		queue     []int
		live      []int // live counts after the lane released its trace
		wantTrace int
		wantQueue []int
		fallback  int
	}{
		{"head not live", 64, []int{1, 2}, []int{0, 0, 1, 0}, 1, []int{2, 0}, 0},
		{"skip live head", 64, []int{2, 1, 3}, []int{0, 0, 1, 0}, 1, []int{2, 3, 0}, 0},
		// The finished trace itself (now at the tail) is not live.
		{"live entries skipped up to the tail", 3, []int{2, 3}, []int{0, 0, 1, 1}, 0, []int{2, 3}, 0},
		{"all scanned live: head", 2, []int{2, 3}, []int{0, 0, 1, 1}, 2, []int{3, 0}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := mustNew(t, Config{Lanes: 1, MaxRatio: 1, RecycleScan: c.scan}, traces)
			sc.Warmup()
			sc.StartProfiling(t0)
			// The lane plays trace 0 (live 1); the others come from c.live.
			sc.queue = append([]int(nil), c.queue...)
			copy(sc.live, c.live)
			sc.live[0]++
			got, ok := sc.Next(0, Outcome{}, at(s))
			if !ok || got.Trace != c.wantTrace || fmt.Sprint(sc.queue) != fmt.Sprint(c.wantQueue) {
				t.Fatalf("recycle took trace %d (ok %v), queue %v; want trace %d, queue %v", got.Trace, ok, sc.queue, c.wantTrace, c.wantQueue)
			}
			if sc.Stats().LiveFallbacks != c.fallback {
				t.Errorf("LiveFallbacks = %d, want %d", sc.Stats().LiveFallbacks, c.fallback)
			}
		})
	}
	// With wrap-fill, a finished trace still live elsewhere is the only
	// candidate and is taken anyway.
	sc := mustNew(t, fixedK(3, 0), []TraceInfo{info("a", s), info("b", s)})
	sc.Warmup()
	sc.StartProfiling(t0)
	got, ok := sc.Next(0, Outcome{}, at(s))
	if !ok || got.Trace != 0 || got.RecyclePass != 2 || sc.Stats().LiveFallbacks != 1 {
		t.Fatalf("wrap-filled recycle = %+v %v stats %+v; want trace 0 pass 2 via the live fallback", got, ok, sc.Stats())
	}
}

func TestDurationStop(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		finish time.Duration // when the request finished
		gap    time.Duration
		ok     bool
	}{
		{"due before deadline", 50 * s, 9 * s, true},
		{"due exactly at deadline", 50 * s, 10 * s, false},
		{"due after deadline", 55 * s, 10 * s, false},
		{"finished after deadline", 61 * s, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := mustNew(t, fixedK(1, 60*s), []TraceInfo{info("a", 0, 0, 0, c.gap)})
			sc.Warmup()
			sc.StartProfiling(t0) // turn 3
			got, ok := sc.Next(0, Outcome{}, at(c.finish))
			if ok != c.ok {
				t.Fatalf("Next = %v %v, want ok=%v", got, ok, c.ok)
			}
			if ok && !got.At.Before(sc.Deadline()) {
				t.Fatalf("send at %v not before the deadline %v", got.At, sc.Deadline())
			}
			if !ok {
				if _, again := sc.Next(0, Outcome{}, at(c.finish+s)); again {
					t.Fatal("a done lane sent again")
				}
				if sc.Stats().LanesDone != 1 {
					t.Errorf("LanesDone = %d, want 1", sc.Stats().LanesDone)
				}
			}
		})
	}
}

func TestOverflowShortCircuit(t *testing.T) {
	t.Parallel()
	traces := []TraceInfo{info("long", s, s, s, s, s, s, s, s, s), info("next", s, s)}
	sc := mustNew(t, Config{Lanes: 1, MinRatio: 0, MaxRatio: 0}, traces)
	sc.Warmup()
	p := sc.StartProfiling(t0)
	if p[0].Turn != 1 {
		t.Fatalf("first profiling turn %d, want 1", p[0].Turn)
	}
	got, ok := sc.Next(0, Outcome{Overflow: true}, at(2*s))
	want := Send{Lane: 0, Trace: 1, Turn: 0, At: at(2 * s), Phase: Profiling, Session: 1, NewSession: true}
	if !ok || got != want {
		t.Fatalf("after overflow: %v %v, want the queue head at turn 0 at once: %v", got, ok, want)
	}
	if st := sc.Stats(); st.Overflows != 1 || st.Completed != 0 || st.Queue != 1 {
		t.Errorf("Stats = %+v, want 1 overflow and the cut trace queued", st)
	}
}

func TestLifecyclePanics(t *testing.T) {
	t.Parallel()
	mk := func() *Scheduler { return mustNew(t, fixedK(1, 0), []TraceInfo{info("a", s)}) }
	for name, f := range map[string]func(){
		"Next before profiling":      func() { sc := mk(); sc.Warmup(); sc.Next(0, Outcome{}, t0) },
		"profiling before warmup":    func() { mk().StartProfiling(t0) },
		"warmup twice":               func() { sc := mk(); sc.Warmup(); sc.Warmup() },
		"Next on a lane that is not": func() { sc := mk(); sc.Warmup(); sc.StartProfiling(t0); sc.Next(3, Outcome{}, t0) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic on a misuse")
				}
			}()
			f()
		})
	}
}

// TestConcurrentNext drives many lanes from their own goroutines (run with
// -race); each lane checks that its turns follow one another.
func TestConcurrentNext(t *testing.T) {
	t.Parallel()
	var traces []TraceInfo
	for i := range 7 {
		traces = append(traces, info(fmt.Sprint("t", i), s, 2*s, 0, s))
	}
	const lanes = 32
	sc := mustNew(t, Config{Lanes: lanes, Seed: 9, MinRatio: 0.25, MaxRatio: 0.75, Duration: 500 * s}, traces)
	sc.Warmup()
	first := sc.StartProfiling(t0)
	var wg sync.WaitGroup
	errs := make(chan error, lanes)
	for _, snd := range first {
		wg.Add(1)
		go func(snd Send) {
			defer wg.Done()
			for n := 0; ; n++ {
				fin := snd.At.Add(time.Duration(1+snd.Lane%3) * s)
				next, ok := sc.Next(snd.Lane, Outcome{Overflow: n%11 == 10}, fin)
				if !ok {
					return
				}
				if !next.NewSession && (next.Session != snd.Session || next.Turn != snd.Turn+1) {
					errs <- fmt.Errorf("lane %d: %+v after %+v", snd.Lane, next, snd)
					return
				}
				snd = next
			}
		}(snd)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := sc.Stats(); st.LanesDone != lanes {
		t.Errorf("LanesDone = %d, want %d", st.LanesDone, lanes)
	}
}

// TestScheduleProperties simulates random corpora, service times and
// outcomes on a fake clock and checks the invariants every schedule must
// keep: a session's turns are consecutive from its start turn, each due the
// recorded gap after the previous response, never at or after the deadline;
// a lane has one request at a time; sessions and passes are unique.
func TestScheduleProperties(t *testing.T) {
	t.Parallel()
	for iter := range 300 {
		rng := rand.New(rand.NewPCG(uint64(iter), 17))
		var traces []TraceInfo
		for i := range 1 + rng.IntN(8) {
			gaps := make([]time.Duration, rng.IntN(9))
			for g := range gaps {
				gaps[g] = time.Duration(rng.IntN(20)) * s / 2
			}
			traces = append(traces, info(fmt.Sprint("tr", i%5), gaps...)) // ids may repeat
		}
		cfg := Config{Lanes: 1 + rng.IntN(10), Seed: int64(iter), MinRatio: 0.25, MaxRatio: 0.75,
			Duration: time.Duration(5+rng.IntN(200)) * s, RecycleScan: 1 + rng.IntN(4)}
		sc, err := New(cfg, traces)
		if err != nil {
			continue // every trace had one turn
		}
		if err := checkSchedule(sc, traces, cfg, rng); err != nil {
			t.Fatalf("iteration %d (%d traces, cfg %+v): %v", iter, len(traces), cfg, err)
		}
	}
}

func checkSchedule(sc *Scheduler, traces []TraceInfo, cfg Config, rng *rand.Rand) error {
	type sess struct{ trace, turn int }
	sessions := map[int]*sess{}
	passes := map[string]map[int]bool{}
	newSession := func(snd Send, wantTurn int) error {
		if !snd.NewSession || snd.Turn != wantTurn {
			return fmt.Errorf("session start %+v, want NewSession at turn %d", snd, wantTurn)
		}
		if sessions[snd.Session] != nil {
			return fmt.Errorf("session %d reused by %+v", snd.Session, snd)
		}
		id := traces[snd.Trace].ID
		if passes[id] == nil {
			passes[id] = map[int]bool{}
		}
		if passes[id][snd.RecyclePass] {
			return fmt.Errorf("trace %s pass %d minted twice", id, snd.RecyclePass)
		}
		passes[id][snd.RecyclePass] = true
		sessions[snd.Session] = &sess{snd.Trace, snd.Turn}
		return nil
	}
	for _, snd := range sc.Warmup() {
		if snd.Phase != Warmup || snd.Turn != sc.StartTurn(snd.Lane) {
			return fmt.Errorf("warmup send %+v, k=%d", snd, sc.StartTurn(snd.Lane))
		}
		if err := newSession(snd, snd.Turn); err != nil {
			return err
		}
	}
	start := t0.Add(time.Hour)
	pending := sc.StartProfiling(start)
	deadline := start.Add(cfg.Duration)
	prevFinish := map[int]time.Time{}
	for len(pending) > 0 {
		// Serve the send that is due first; it finishes after a random
		// service time.
		i := 0
		for j := range pending {
			if pending[j].At.Before(pending[i].At) {
				i = j
			}
		}
		snd := pending[i]
		pending = append(pending[:i], pending[i+1:]...)
		if snd.Phase != Profiling || !snd.At.Before(deadline) {
			return fmt.Errorf("send %+v at or after the deadline %v", snd, deadline)
		}
		if snd.NewSession {
			if err := newSession(snd, 0); err != nil {
				return err
			}
			if pf, ok := prevFinish[snd.Lane]; ok && !snd.At.Equal(pf) {
				return fmt.Errorf("recycle %+v not at the previous finish %v", snd, pf)
			}
		} else {
			ss := sessions[snd.Session]
			if ss == nil || ss.trace != snd.Trace || snd.Turn != ss.turn+1 {
				return fmt.Errorf("send %+v does not continue session %+v", snd, ss)
			}
			ss.turn = snd.Turn
			if pf, ok := prevFinish[snd.Lane]; ok && !snd.At.Equal(pf.Add(traces[snd.Trace].Delays[snd.Turn])) {
				return fmt.Errorf("send %+v not due %v after the previous finish %v", snd, traces[snd.Trace].Delays[snd.Turn], pf)
			}
		}
		finish := snd.At.Add(time.Duration(rng.IntN(8000)) * time.Millisecond)
		prevFinish[snd.Lane] = finish
		out := Outcome{Overflow: rng.IntN(20) == 0, Failed: rng.IntN(10) == 0}
		if next, ok := sc.Next(snd.Lane, out, finish); ok {
			if next.Lane != snd.Lane {
				return fmt.Errorf("Next for lane %d returned %+v", snd.Lane, next)
			}
			if !out.Overflow && snd.Turn+1 < traces[snd.Trace].Turns && next.NewSession {
				return fmt.Errorf("session of %+v ended early", snd)
			}
			pending = append(pending, next)
		} else if !out.Overflow && snd.Turn+1 < traces[snd.Trace].Turns && finish.Add(traces[snd.Trace].Delays[snd.Turn+1]).Before(deadline) {
			return fmt.Errorf("lane %d stopped although turn %d was due before the deadline", snd.Lane, snd.Turn+1)
		}
	}
	if st := sc.Stats(); st.LanesDone != cfg.Lanes {
		return fmt.Errorf("LanesDone = %d, want %d", st.LanesDone, cfg.Lanes)
	}
	return nil
}

func BenchmarkNext(b *testing.B) {
	var traces []TraceInfo
	for i := range 200 {
		traces = append(traces, info(fmt.Sprint("t", i), s, s, s, s, s, s, s, s, s))
	}
	sc, err := New(Config{Lanes: 64, MinRatio: 0.25, MaxRatio: 0.75}, traces)
	if err != nil {
		b.Fatal(err)
	}
	sc.Warmup()
	sc.StartProfiling(t0)
	b.ReportAllocs()
	now := t0
	for i := 0; b.Loop(); i++ {
		now = now.Add(time.Millisecond)
		sc.Next(i%64, Outcome{}, now)
	}
}
