package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
	"github.com/agentperf/agentperf/timing"
)

// memCoord is an in-process Coordinator shared by the shards of one run
// in a test: each barrier releases when every shard reached it, at one
// instant a little after the last arrival, with the alignments combined.
type memCoord struct {
	mu      sync.Mutex
	n       int
	arrived map[string]int
	align   map[string]timing.Alignment
	release map[string]chan struct{}
	at      map[string]time.Time
	stopped chan struct{}
	reason  string
	stopOne sync.Once
}

func newMemCoord(n int) *memCoord {
	return &memCoord{n: n, arrived: map[string]int{}, align: map[string]timing.Alignment{}, release: map[string]chan struct{}{}, at: map[string]time.Time{}, stopped: make(chan struct{})}
}

func (m *memCoord) Barrier(ctx context.Context, name string, a timing.Alignment) (time.Time, timing.Alignment, error) {
	m.mu.Lock()
	ch := m.release[name]
	if ch == nil {
		ch = make(chan struct{})
		m.release[name] = ch
	}
	m.align[name] = m.align[name].Combine(a)
	m.arrived[name]++
	if m.arrived[name] == m.n {
		m.at[name] = time.Now().Add(20 * time.Millisecond)
		close(ch)
	}
	m.mu.Unlock()
	select {
	case <-ch:
	case <-m.stopped:
		return time.Time{}, a, fmt.Errorf("stopped: %s", m.StopReason())
	case <-ctx.Done():
		return time.Time{}, a, ctx.Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.at[name], m.align[name], nil
}

func (m *memCoord) Stopped() <-chan struct{} { return m.stopped }

func (m *memCoord) StopReason() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reason
}

func (m *memCoord) Abort(reason, msg string) {
	m.stopOne.Do(func() {
		m.mu.Lock()
		m.reason = reason + ": " + msg
		m.mu.Unlock()
		close(m.stopped)
	})
}

// shardPeer is the Coordinator one shard sees: the shared memCoord, whose
// Abort from this shard stops the others (a shard does not watch its own
// stop: the engine has stopped already).
type shardPeer struct {
	*memCoord
}

// newZeroSim makes a zero-latency simulator serving "m", not yet
// listening; it is closed when the test ends.
func newZeroSim(t *testing.T) *sim.Server {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Model, cfg.ZeroLatency = "m", true
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// startZeroSim is newZeroSim listening on its own port.
func startZeroSim(t *testing.T) *sim.Server {
	t.Helper()
	srv := newZeroSim(t)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	return srv
}

func shardTestConfig(t *testing.T, url string, traces []dataset.Trace, sink metrics.Sink) Config {
	t.Helper()
	syn, err := prompttext.New(tokenizer.Builtin(), prompttext.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig() // v1.0
	c.URL = url
	c.Models = []string{"m"}
	c.Traces = traces
	c.Synth = syn
	c.Concurrency = 7
	c.Seed = 11
	c.BenchmarkID = "run-shard-test"
	c.BenchmarkDuration = 800 * time.Millisecond
	c.GracePeriod = 2 * time.Second
	c.Streaming = true
	c.UseServerTokenCount = true
	c.CacheBust = presetMarkers
	c.Classifier = scenario.DefaultClassifier()
	c.Sink = sink
	return c
}

// laneSeq renders each lane's records, in send order, by what a lane's
// seeded state decides: phase, conversation, turn, session number and the
// prompt the server counted (the sim's token count of the body, marker
// included).
func laneSeq(recs []*metrics.Record) map[string][]string {
	slices.SortStableFunc(recs, func(a, b *metrics.Record) int {
		if a.CreditIssuedNs != b.CreditIssuedNs {
			return int(a.CreditIssuedNs - b.CreditIssuedNs)
		}
		return strings.Compare(fmt.Sprint(a.SessionNum, a.TurnIndex), fmt.Sprint(b.SessionNum, b.TurnIndex))
	})
	out := map[string][]string{}
	for _, r := range recs {
		in := -1
		if r.Usage != nil {
			in = r.Usage.PromptTokens
		}
		out[r.WorkerID] = append(out[r.WorkerID], fmt.Sprintf("%s %s#%d s%d in=%d", r.Phase, r.ConversationID, r.TurnIndex, r.SessionNum, in))
	}
	return out
}

// TestShardZeroOfOneIsTheUnshardedRun: Shard 0/1 is the whole run: the
// same lanes, each sending the same requests in the same order (the
// prefix both runs reached before their deadline; the wall clock decides
// how far a lane gets), with the same token statistics, and its records
// carry no shard.
func TestShardZeroOfOneIsTheUnshardedRun(t *testing.T) {
	srv := startZeroSim(t)
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 5, Traces: 5, MinTurns: 4, MaxTurns: 9, TimeScale: 0.002})
	run := func(sh timing.Shard) map[string][]string {
		sink := &memSink{}
		cfg := shardTestConfig(t, srv.URL, traces, sink)
		cfg.Shard = sh
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Aborted != "" || res.Accounting.Check() != nil {
			t.Fatalf("shard %v: aborted %q, accounting %+v", sh, res.Aborted, res.Accounting)
		}
		for _, r := range sink.records() {
			if r.Shard != "" {
				t.Fatalf("shard %v: record carries shard %q; an unsharded run's records carry none", sh, r.Shard)
			}
		}
		return laneSeq(sink.records())
	}
	whole, one := run(timing.Shard{}), run(timing.Shard{Index: 0, Count: 1})
	if len(whole) != 7 || len(one) != 7 {
		t.Fatalf("lanes: %d unsharded, %d as shard 0/1; want 7", len(whole), len(one))
	}
	for lane, w := range whole {
		g := one[lane]
		n := min(len(w), len(g))
		if n < 2 {
			t.Fatalf("%s: %d and %d records: too few to compare", lane, len(w), len(g))
		}
		if !slices.Equal(w[:n], g[:n]) {
			t.Fatalf("%s differs between the unsharded run and shard 0/1:\n%s\nvs\n%s", lane, strings.Join(w[:n], "\n"), strings.Join(g[:n], "\n"))
		}
	}
}

// TestThreeShardsPlayTheUnshardedLanes: three shards of 7 lanes (lanes
// 0, 3, 6 / 1, 4 / 2, 5), run at once against one sim with a shared
// coordinator, play the unsharded run's lanes: each global lane on
// exactly one shard, named by its global index, its first requests
// (phase, trace, turn, session, prompt) the same as the unsharded run's;
// the shards' records add up to what the sim received.
func TestThreeShardsPlayTheUnshardedLanes(t *testing.T) {
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 5, Traces: 5, MinTurns: 4, MaxTurns: 9, TimeScale: 0.002})
	wholeSrv := startZeroSim(t)
	wsink := &memSink{}
	if _, err := Run(context.Background(), shardTestConfig(t, wholeSrv.URL, traces, wsink)); err != nil {
		t.Fatal(err)
	}
	whole := laneSeq(wsink.records())

	srv := startZeroSim(t)
	co := newMemCoord(3)
	sinks := make([]*memSink, 3)
	results := make([]*Result, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		sinks[i] = &memSink{}
		cfg := shardTestConfig(t, srv.URL, traces, sinks[i])
		cfg.Shard = timing.Shard{Index: i, Count: 3}
		cfg.Coordinator = shardPeer{co}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = res
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	total := 0
	seen := map[string]int{}
	for i, sink := range sinks {
		res := results[i]
		if res.Aborted != "" || res.Accounting.Check() != nil {
			t.Fatalf("shard %d: aborted %q (%s), accounting %+v", i, res.Aborted, res.AbortMessage, res.Accounting)
		}
		recs := sink.records()
		total += len(recs)
		for _, r := range recs {
			if want := fmt.Sprintf("%d/3", i); r.Shard != want {
				t.Fatalf("shard %d: record carries shard %q, want %q", i, r.Shard, want)
			}
			if r.Lane%3 != i || r.WorkerID != fmt.Sprintf("lane_%04d", r.Lane) {
				t.Fatalf("shard %d played lane %d (%s): lanes are dealt i mod 3 and named by their global index", i, r.Lane, r.WorkerID)
			}
		}
		for lane, seq := range laneSeq(recs) {
			seen[lane]++
			w := whole[lane]
			n := min(len(w), len(seq), 3)
			if n < 2 || !slices.Equal(w[:n], seq[:n]) {
				t.Fatalf("shard %d %s: first requests\n%s\nwant the unsharded run's\n%s", i, lane, strings.Join(seq[:min(len(seq), 3)], "\n"), strings.Join(w[:min(len(w), 3)], "\n"))
			}
		}
		if !results[i].ProfilingStart.Equal(results[0].ProfilingStart) {
			t.Fatalf("shard %d started profiling at %s, shard 0 at %s: want one instant", i, results[i].ProfilingStart, results[0].ProfilingStart)
		}
	}
	if len(seen) != 7 {
		t.Fatalf("%d lanes played, want 7: %v", len(seen), seen)
	}
	if got := srv.Stats().Requests; int(got) != total {
		t.Fatalf("the sim received %d requests, the shards recorded %d", got, total)
	}
}

// TestShardStopStopsTheOthers: when one shard aborts (here its failed
// request threshold: every request of its lanes fails), the others stop
// too, each with the shard_stopped reason, and still return a Result.
func TestShardStopStopsTheOthers(t *testing.T) {
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 5, Traces: 5, MinTurns: 4, MaxTurns: 9, TimeScale: 0.002})
	srv := startZeroSim(t)
	co := newMemCoord(2)
	results := make([]*Result, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		cfg := shardTestConfig(t, srv.URL, traces, &memSink{})
		cfg.Shard = timing.Shard{Index: i, Count: 2}
		cfg.Coordinator = shardPeer{co}
		cfg.BenchmarkDuration = time.Minute
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			if i == 1 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
			}
			res, err := Run(ctx, cfg)
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = res
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if !results[1].Cancelled {
		t.Fatalf("shard 1: Cancelled = false, want the interrupted shard")
	}
	if results[0].Aborted != AbortShardStopped || !strings.Contains(results[0].AbortMessage, "interrupted") {
		t.Fatalf("shard 0: aborted %q (%s), want %q naming the interruption", results[0].Aborted, results[0].AbortMessage, AbortShardStopped)
	}
}

// thresholdCoord is a memCoord that judges the threshold over every shard
// and fires on the first report.
type thresholdCoord struct {
	*memCoord
	reports atomic.Int64
	fired   atomic.Bool
}

func (c *thresholdCoord) ReportThreshold(judged, failed int) {
	if c.reports.Add(1) == 1 {
		c.fired.Store(true)
		c.memCoord.Abort("failed_request_threshold", "over every shard")
	}
}
func (c *thresholdCoord) ThresholdFired() bool { return c.fired.Load() }

// TestGlobalThresholdAborts: a shard's judged profiling requests are
// reported to a coordinator that judges the threshold over every shard;
// when it fires, the shard aborts with failed_request_threshold (not
// shard_stopped).
func TestGlobalThresholdAborts(t *testing.T) {
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 5, Traces: 5, MinTurns: 4, MaxTurns: 9, TimeScale: 0.002})
	srv := startZeroSim(t)
	co := &thresholdCoord{memCoord: newMemCoord(1)}
	cfg := shardTestConfig(t, srv.URL, traces, &memSink{})
	cfg.Shard = timing.Shard{Index: 0, Count: 2}
	cfg.Coordinator = co
	cfg.BenchmarkDuration = time.Minute
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Aborted != AbortFailedRequestThreshold || co.reports.Load() == 0 {
		t.Fatalf("aborted %q (%s) after %d reports, want %q", res.Aborted, res.AbortMessage, co.reports.Load(), AbortFailedRequestThreshold)
	}
}
