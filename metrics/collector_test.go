package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestCollectorConcurrentAdd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := &fakeClock{t: t0}
	c, err := NewCollector(dir, CollectorOptions{Now: clk.Now, Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	const lanes, per = 8, 200
	var wg sync.WaitGroup
	for l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				r := okRecord(l*per+i, int64(i), 50, 5, 1000, 20, 1, 2)
				r.Lane, r.WorkerID = l, ""
				switch i % 10 {
				case 3:
					r.Error = &Error{Code: 500, Type: "Internal Server Error", Message: fmt.Sprint("boom ", i%3)}
				case 7:
					c.AddOverflow(r)
					continue
				}
				c.Add(r)
				if i%50 == 0 {
					clk.Advance(time.Second)
					c.Snapshot()
				}
			}
		}()
	}
	wg.Wait()
	s, err := c.Finish(RunInfo{BenchmarkID: "x", Accounting: Accounting{Sent: lanes * per,
		ProfilingOK: lanes * per * 8 / 10, ProfilingErrors: lanes * per / 10, Overflows: lanes * per / 10}})
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	lines := readLines(t, filepath.Join(dir, FileRecords))
	if len(lines) != lanes*per*9/10 {
		t.Errorf("%d lines, want %d", len(lines), lanes*per*9/10)
	}
	if n := len(readLines(t, filepath.Join(dir, FileOverflow))); n != lanes*per/10 {
		t.Errorf("%d overflow lines", n)
	}
	if s.RequestCount != lanes*per*8/10 || s.ErrorRequestCount != lanes*per/10 || s.ContextOverflowCount != lanes*per/10 {
		t.Errorf("counts %d/%d/%d", s.RequestCount, s.ErrorRequestCount, s.ContextOverflowCount)
	}
	if len(s.Errors) != 3 || s.Errors[0].Count+s.Errors[1].Count+s.Errors[2].Count != s.ErrorRequestCount {
		t.Errorf("error summary %+v", s.Errors)
	}
	if !strings.HasPrefix(lines[0]["metadata"].(map[string]any)["worker_id"].(string), "lane_000") {
		t.Errorf("default worker id: %v", lines[0]["metadata"])
	}
}

// TestFinishAccountingMismatch: a caller's accounting that does not add up
// is written, returned and warned about — after every file is written.
func TestFinishAccountingMismatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		acct Accounting
		want string
	}{
		{"sent too high", Accounting{Sent: 5, ProfilingOK: 2}, "3 requests are missing"},
		{"only sent, records missing", Accounting{Sent: 4}, "2 requests are missing"},
		{"buckets disagree with records", Accounting{Sent: 2, ProfilingOK: 1, ProfilingErrors: 1}, "differ from the records received"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c, err := NewCollector(dir, CollectorOptions{Now: fixedClock(t0)})
			if err != nil {
				t.Fatal(err)
			}
			c.Add(okRecord(0, 0, 10, 1, 10, 3, 0, 0))
			c.Add(okRecord(1, 0, 10, 1, 10, 3, 0, 0))
			s, err := c.Finish(RunInfo{Accounting: tc.acct})
			if !errors.Is(err, ErrAccounting) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Finish error %v, want ErrAccounting with %q", err, tc.want)
			}
			if s == nil || len(s.Warnings()) == 0 || !strings.Contains(s.Warnings()[0], "request_accounting") {
				t.Fatalf("no warning: %+v", s)
			}
			agg := decodeJSON(t, readFile(t, dir, FileAggregateJSON))
			ra := agg["metadata"].(map[string]any)["request_accounting"].(map[string]any)
			if ra["adds_up"] != false || !strings.Contains(ra["check_error"].(string), tc.want) {
				t.Errorf("request_accounting %v", ra)
			}
		})
	}
}

// TestCollectorWriteErrorIsReturned: a failing record file surfaces in Err
// and Finish, and the broken file is not published under its final name.
func TestCollectorWriteErrorIsReturned(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := NewCollector(dir, CollectorOptions{Now: fixedClock(t0), BufferSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	c.w.recF.Close() // simulate the disk going away
	c.Add(okRecord(0, 0, 10, 1, 10, 3, 0, 0))
	if c.Err() == nil {
		t.Fatal("write error not reported by Err")
	}
	_, err = c.Finish(RunInfo{})
	if err == nil || !strings.Contains(err.Error(), FileRecords) {
		t.Fatalf("Finish error %v, want one naming %s", err, FileRecords)
	}
	if _, err := os.Stat(filepath.Join(dir, FileRecords)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a broken %s was published", FileRecords)
	}
}

func TestCollectorFlushesPeriodically(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := &fakeClock{t: t0}
	c, err := NewCollector(dir, CollectorOptions{Now: clk.Now, FlushInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	partial := filepath.Join(dir, FileRecords+partialSuffix)
	c.Add(okRecord(0, 0, 10, 1, 10, 3, 0, 0))
	if b, _ := os.ReadFile(partial); len(b) != 0 {
		t.Fatalf("flushed before the interval: %d bytes", len(b))
	}
	clk.Advance(1500 * time.Millisecond)
	c.Add(okRecord(1, 0, 10, 1, 10, 3, 0, 0))
	if b, _ := os.ReadFile(partial); strings.Count(string(b), "\n") != 2 {
		t.Fatalf("not flushed after the interval: %q", b)
	}
	if _, err := c.Finish(RunInfo{}); err != nil {
		t.Fatal(err)
	}
	c.Add(okRecord(2, 0, 10, 1, 10, 3, 0, 0))
	if c.LateRecords() != 1 {
		t.Errorf("late records %d", c.LateRecords())
	}
	if _, err := c.Finish(RunInfo{}); err == nil {
		t.Error("second Finish succeeded")
	}
}

// TestSnapshotSlidingWindow drives the live statistics with a fake clock.
func TestSnapshotSlidingWindow(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	c, err := NewCollector(t.TempDir(), CollectorOptions{Now: clk.Now, LiveWindow: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Snapshot()
	if s.WindowSamples != 0 || !math.IsNaN(s.TTFTP50) || s.RequestsPerSec != 0 {
		t.Fatalf("empty snapshot %+v", s)
	}
	// 5 s with 4 requests/s, TTFT 100 ms, ITL 10 ms, OSL 11.
	for range 5 {
		for i := range 4 {
			c.Add(okRecord(i, 0, 100, 10, 1000, 11, 0, 0))
		}
		clk.Advance(time.Second)
	}
	c.AddOverflow(okRecord(9, 0, 0, 0, 0, 1, 0, 0))
	s = c.Snapshot()
	if s.Profiling.OK != 20 || s.InFlight != 0 || s.Overflows() != 1 || s.Elapsed != 5*time.Second {
		t.Errorf("counts %+v", s)
	}
	wo := okRecord(10, 0, 0, 0, 0, 1, 0, 0)
	wo.Phase = PhaseWarmup
	c.AddOverflow(wo)
	wc := okRecord(11, 0, 0, 0, 0, 1, 0, 0)
	wc.Phase, wc.Cancelled = PhaseWarmup, true
	c.Add(wc)
	if s = c.Snapshot(); s.Overflows() != 2 || s.Warmup.Overflows != 1 || s.Cancelled() != 1 || s.Warmup.Cancelled != 1 {
		t.Errorf("warmup overflows/cancellations %+v, want 1 of 2 overflows and 1 of 1 cancellation", s)
	}
	if !near(s.RequestsPerSec, 4) || !near(s.OutputTokensPerSec, 44) {
		t.Errorf("rates %v req/s %v tok/s, want 4 and 44", s.RequestsPerSec, s.OutputTokensPerSec)
	}
	if math.Abs(s.TTFTP50-100) > 0.1 || math.Abs(s.ITLP99-10) > 0.01 {
		t.Errorf("percentiles ttft p50 %v itl p99 %v", s.TTFTP50, s.ITLP99)
	}
	if !math.IsNaN(s.TheoreticalHitRate) || s.Window != 5*time.Second {
		t.Errorf("records without blocks: theoretical hit rate %v (want NaN), window %v (want 5 s)", s.TheoreticalHitRate, s.Window)
	}
	// Records with block counts: 3 of 4 blocks reusable, then 1 of 4.
	r := okRecord(30, 0, 100, 10, 1000, 11, 0, 0)
	r.HitBlocks, r.TotalBlocks = 3, 4
	c.Add(r)
	r.HitBlocks = 1
	c.Add(r)
	if s = c.Snapshot(); !near(s.TheoreticalHitRate, 0.5) {
		t.Errorf("theoretical hit rate %v, want 4/8", s.TheoreticalHitRate)
	}
	// 20 s later the window is empty again, the totals are not.
	clk.Advance(20 * time.Second)
	s = c.Snapshot()
	if s.WindowSamples != 0 || s.RequestsPerSec != 0 || !math.IsNaN(s.ITLP50) || s.Profiling.OK != 22 || !math.IsNaN(s.TheoreticalHitRate) {
		t.Errorf("after the window: %+v", s)
	}
}

// TestAddRoutesOverflows: a record flagged ContextOverflow given to Add
// goes to the overflow export only, like AddOverflow.
func TestAddRoutesOverflows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := NewCollector(dir, CollectorOptions{Now: fixedClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	r := okRecord(0, 0, 10, 1, 10, 3, 0, 0)
	r.Usage, r.ContextOverflow = nil, true
	r.Error = &Error{Code: 400, Message: "prompt is too long", Category: CategoryHTTP}
	c.Add(r)
	c.Add(okRecord(1, 0, 10, 1, 10, 3, 0, 0))
	s, err := c.Finish(RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(readLines(t, filepath.Join(dir, FileRecords))); n != 1 {
		t.Errorf("%d record lines, want 1", n)
	}
	ovf := readLines(t, filepath.Join(dir, FileOverflow))
	if len(ovf) != 1 || ovf[0]["metadata"].(map[string]any)["context_overflow_skip"] != true {
		t.Errorf("overflow lines %v", ovf)
	}
	if s.ContextOverflowCount != 1 || s.ErrorRequestCount != 0 || s.Info.Accounting.Overflows != 1 {
		t.Errorf("overflow counted as %d overflows, %d errors", s.ContextOverflowCount, s.ErrorRequestCount)
	}
}

// TestSnapshotFlushes: the live view's periodic Snapshot gets buffered
// lines to disk even when no record arrives.
func TestSnapshotFlushes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := &fakeClock{t: t0}
	c, err := NewCollector(dir, CollectorOptions{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	c.Add(okRecord(0, 0, 10, 1, 10, 3, 0, 0))
	clk.Advance(2 * time.Second)
	c.Snapshot()
	if b, _ := os.ReadFile(filepath.Join(dir, FileRecords+partialSuffix)); strings.Count(string(b), "\n") != 1 {
		t.Errorf("line not on disk after Snapshot: %q", b)
	}
}

// TestFinishEmptyRun: a run without a single record still writes every
// file, with request_count 0 and a warning instead of made-up numbers.
func TestFinishEmptyRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := NewCollector(dir, CollectorOptions{Now: fixedClock(t0), SliceDuration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Finish(RunInfo{BenchmarkID: "empty", Scenario: "inferencex-agentx-mvp"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{FileRecords, FileOverflow, FileAggregateJSON, FileAggregateCSV} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	agg := decodeJSON(t, readFile(t, dir, FileAggregateJSON))
	if rc := agg["request_count"].(map[string]any)["avg"]; rc != json.Number("0.0") {
		t.Errorf("request_count %v", rc)
	}
	if _, has := agg["benchmark_duration"]; has {
		t.Error("benchmark_duration without requests")
	}
	md := agg["metadata"].(map[string]any)
	if md["submission_valid"] != false || len(md["submission_invalid_reasons"].([]any)) != 0 {
		t.Errorf("metadata %v", md)
	}
	var out strings.Builder
	if err := s.WriteTable(&out); err != nil || !strings.Contains(out.String(), "WARNING: no successful profiling requests") {
		t.Errorf("table (%v):\n%s", err, out.String())
	}
}

// TestTimeslicesBogusWindow: a record with a wild timestamp does not make
// Finish allocate billions of slices; the problem is a warning.
func TestTimeslicesBogusWindow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := NewCollector(dir, CollectorOptions{Now: fixedClock(t0), SliceDuration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c.Add(okRecord(0, 0, 10, 1, 10, 3, 0, 0))
	bogus := okRecord(1, 0, 10, 1, 10, 3, 0, 0)
	bogus.RequestStartNs = 1 // 1970
	c.Add(bogus)
	s, err := c.Finish(RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Timeslices) != 0 || !strings.Contains(strings.Join(s.Warnings(), "\n"), "timeslices not written") {
		t.Errorf("%d slices, warnings %v", len(s.Timeslices), s.Warnings())
	}
}

// TestSnapshotWindowIsOnePhase: once profiling starts, the live window's
// percentiles and rates cover profiling records only: slow warmup
// primers, finished before or after the start, never enter them, and the
// rates' span starts at the profiling start.
func TestSnapshotWindowIsOnePhase(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	c, err := NewCollector(t.TempDir(), CollectorOptions{Now: clk.Now, LiveWindow: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	warm := func() {
		r := okRecord(1, 0, 12_000, 10, 1000, 11, 0, 0) // TTFT 12 s
		r.Phase = PhaseWarmup
		c.Add(r)
	}
	for range 5 {
		warm()
	}
	clk.Advance(2 * time.Second)
	if s := c.Snapshot(); s.WindowPhase != PhaseWarmup || math.Abs(s.TTFTP50-12_000) > 20 {
		t.Fatalf("during warmup: window phase %q, TTFT p50 %v; want warmup's 12 s", s.WindowPhase, s.TTFTP50)
	}
	c.ProfilingStarted(clk.Now(), clk.Now().Add(time.Minute))
	s := c.Snapshot()
	if s.WindowPhase != PhaseProfiling || !math.IsNaN(s.TTFTP50) || s.WindowSamples != 0 || s.RequestsPerSec != 0 {
		t.Fatalf("at the profiling start the window still holds warmup: %+v", s)
	}
	clk.Advance(time.Second)
	warm() // a primer that finishes after the start
	for range 4 {
		c.Add(okRecord(2, 0, 100, 10, 1000, 11, 0, 0))
	}
	clk.Advance(time.Second)
	s = c.Snapshot()
	if math.Abs(s.TTFTP99-100) > 0.5 || s.WindowSamples != 4 {
		t.Errorf("profiling window: TTFT p99 %v over %d samples, want 100 ms over the 4 profiling records", s.TTFTP99, s.WindowSamples)
	}
	if s.Window != 2*time.Second || !near(s.RequestsPerSec, 2) {
		t.Errorf("profiling window %v at %v req/s, want 2 s (since the start) at 2 req/s", s.Window, s.RequestsPerSec)
	}
	if s.Warmup.OK != 6 || s.Profiling.OK != 4 {
		t.Errorf("counts warmup %d profiling %d, want 6 and 4 (every record counted)", s.Warmup.OK, s.Profiling.OK)
	}
}

// TestSnapshotSendLateness: the live window measures how late requests
// were sent against their intended send time (RequestStartNs −
// CreditIssuedNs).
func TestSnapshotSendLateness(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	c, err := NewCollector(t.TempDir(), CollectorOptions{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		r := okRecord(i, 0, 100, 10, 1000, 11, 0, 0)
		if i >= 95 {
			r.CreditIssuedNs = r.RequestStartNs - 250*ms // five sent 250 ms late
		}
		c.Add(r)
	}
	s := c.Snapshot()
	if math.Abs(s.SendLateP50-1) > 0.01 || math.Abs(s.SendLateP99-250) > 0.5 {
		t.Errorf("send lateness p50 %v p99 %v, want 1 ms and 250 ms", s.SendLateP50, s.SendLateP99)
	}
}

// TestCollectorReadsTheRunsTally: a Collector given the run's tally counts
// no record itself: its snapshot, accounting and aggregates read the
// tally, each record counted once by whoever produced it; and a record the
// tally counted that never reached the Collector is an accounting error.
func TestCollectorReadsTheRunsTally(t *testing.T) {
	t.Parallel()
	recs, ovf := fixtureRecords()
	for _, tc := range []struct {
		name string
		lost int // records counted but not given to the Collector
		want string
	}{
		{"every record", 0, ""},
		{"a record lost", 1, "reached the aggregates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tl Tally
			dir := t.TempDir()
			c, err := NewCollector(dir, CollectorOptions{Now: fixedClock(t0), Tally: &tl})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range append(recs, ovf) {
				tl.Send()
				tl.Returned()
				tl.Add(r)
				if i >= tc.lost {
					c.Add(r)
				}
			}
			want := tl.Counts().Accounting()
			if got := c.Accounting(); got != withSent(want, want.Total()) {
				t.Errorf("Accounting() = %+v, want the tally's %+v", got, want)
			}
			if s := c.Snapshot(); s.Profiling.OK != 5 || s.Errors() != 2 || s.Overflows() != 1 || s.Cancelled() != 1 || s.Warmup.OK != 1 {
				t.Errorf("snapshot counts %+v, want the fixture's, each once", s)
			}
			s, err := c.Finish(RunInfo{BenchmarkID: "x", Accounting: want})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Finish: %v", err)
				}
			} else if !errors.Is(err, ErrAccounting) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Finish error %v, want ErrAccounting with %q", err, tc.want)
			}
			if s.ErrorRequestCount != 1 || s.ContextOverflowCount != 1 || s.Info.Accounting != want {
				t.Errorf("aggregates: %d errors, %d overflows, accounting %+v; want 1, 1, %+v", s.ErrorRequestCount, s.ContextOverflowCount, s.Info.Accounting, want)
			}
		})
	}
}
