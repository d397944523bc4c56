package metrics

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// tornWriter writes the first half of what it is given, then fails: a
// disk that fills up in the middle of a line.
type tornWriter struct{ w io.Writer }

func (t tornWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p[:len(p)/2])
	if err == nil {
		err = syscall.ENOSPC
	}
	return n, err
}

// TestRecordWriterCutsBackAfterFailedWrite: a write that fails after half
// a line leaves the stream with its complete lines only, Err says so, and
// Close keeps the stream under its .partial name.
func TestRecordWriterCutsBackAfterFailedWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := NewRecordWriter(dir, WriterOptions{Now: fixedClock(t0), BufferSize: 64, ReserveBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	w.Add(okRecord(0, 0, 10, 1, 10, 3, 0, 0))
	w.Add(okRecord(1, 0, 10, 1, 10, 3, 0, 0))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	partial := filepath.Join(dir, FileRecords+partialSuffix)
	good, _ := os.ReadFile(partial)
	if strings.Count(string(good), "\n") != 2 {
		t.Fatalf("before the failure: %q", good)
	}
	w.recW = bufio.NewWriterSize(tornWriter{w.recF}, 64) // the disk fills up
	w.Add(okRecord(2, 0, 10, 1, 10, 3, 0, 0))
	if err := w.Err(); !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), FileRecords) {
		t.Fatalf("Err %v, want ENOSPC naming %s", err, FileRecords)
	}
	if b, _ := os.ReadFile(partial); string(b) != string(good) {
		t.Errorf("after the torn write the stream is %d bytes, want its %d bytes of complete lines", len(b), len(good))
	}
	if _, err := os.Stat(filepath.Join(dir, FileReserve)); !os.IsNotExist(err) {
		t.Errorf("reserve kept after a write error: %v", err)
	}
	w.Add(okRecord(3, 0, 10, 1, 10, 3, 0, 0)) // nothing more is written
	if err := w.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close: %v, want the write error", err)
	}
	if b, _ := os.ReadFile(partial); string(b) != string(good) {
		t.Errorf("after another record the stream is %d bytes, want %d: something was written after the failure", len(b), len(good))
	}
	if _, err := os.Stat(filepath.Join(dir, FileRecords)); !os.IsNotExist(err) {
		t.Errorf("a failed stream was published as %s: %v", FileRecords, err)
	}
}

// TestRecordWriterRoutesAndCloses: alone, the writer puts each record in
// its stream by its bucket, publishes both at Close and counts records
// that come later.
func TestRecordWriterRoutesAndCloses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := NewRecordWriter(dir, WriterOptions{Now: fixedClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	recs, ovf := fixtureRecords()
	for _, r := range recs {
		w.Add(r)
	}
	w.Add(ovf) // flagged ContextOverflow: its own stream
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(readLines(t, filepath.Join(dir, FileRecords))); n != len(recs) {
		t.Errorf("%d record lines, want %d", n, len(recs))
	}
	if n := len(readLines(t, filepath.Join(dir, FileOverflow))); n != 1 {
		t.Errorf("%d overflow lines, want 1", n)
	}
	w.Add(recs[0])
	if w.LateRecords() != 1 {
		t.Errorf("late records %d, want 1", w.LateRecords())
	}
	if err := w.Close(); err == nil {
		t.Error("second Close succeeded")
	}
}

// TestAggregatorAlone: the aggregator without a writer gives the Summary
// and the aggregate files of a Collector, byte for byte (the golden
// files), and writes nothing else.
func TestAggregatorAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := NewAggregator(AggregatorOptions{SliceDuration: time.Second, Location: time.UTC, Version: "agentperf-test"})
	recs, ovf := fixtureRecords()
	for _, r := range append(recs, ovf) {
		a.Add(r)
	}
	if acct := a.Accounting(); acct.Sent != 10 || acct.Overflows != 1 || acct.ProfilingErrors != 1 || acct.WarmupErrors != 1 || acct.Cancelled != 1 {
		t.Errorf("accounting %+v", acct)
	}
	s, err := a.Finish(dir, fixtureInfo())
	if err != nil {
		t.Fatal(err)
	}
	if s.RequestCount != 5 || s.ErrorRequestCount != 1 || s.ContextOverflowCount != 1 || len(s.Errors) != 1 {
		t.Errorf("summary counts %d ok / %d errors / %d overflows, errors %+v", s.RequestCount, s.ErrorRequestCount, s.ContextOverflowCount, s.Errors)
	}
	for _, name := range []string{FileAggregateJSON, FileAggregateCSV, FileTimeslicesJSON, FileTimeslicesCSV} {
		checkGolden(t, name, readFile(t, dir, name))
	}
	for _, name := range []string{FileRecords, FileOverflow, FileRecords + partialSuffix} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("the aggregator wrote %s", name)
		}
	}
	a.Add(recs[0])
	if a.LateRecords() != 1 {
		t.Errorf("late records %d, want 1", a.LateRecords())
	}
}

// TestAggregatorSummaryWritesNothing: Summary alone computes the
// aggregates and checks the caller's accounting without any file.
func TestAggregatorSummaryWritesNothing(t *testing.T) {
	t.Parallel()
	a := NewAggregator(AggregatorOptions{})
	a.Add(okRecord(0, 0, 100, 10, 1000, 11, 0, 0))
	a.Add(okRecord(1, 0, 300, 10, 1000, 11, 0, 0))
	s, err := a.Summary(RunInfo{Accounting: Accounting{Sent: 3}})
	if err != nil {
		t.Fatal(err)
	}
	ttft, ok := s.Metric("time_to_first_token")
	if !ok || ttft.Avg != 200 || s.RequestCount != 2 {
		t.Errorf("ttft %+v (found %v), %d requests", ttft, ok, s.RequestCount)
	}
	if !errors.Is(s.AccountingErr, ErrAccounting) {
		t.Errorf("3 sent, 2 records: AccountingErr %v", s.AccountingErr)
	}
	if _, err := a.Summary(RunInfo{}); err == nil {
		t.Error("second Summary succeeded")
	}
}

// TestLiveWindowReadsTheRunsTally: given the run's tally, the live window
// reads its counts and in-flight figure at every Snapshot and counts
// nothing itself (the producer counted each record once); without one it
// counts the records added, and nothing is in flight.
func TestLiveWindowReadsTheRunsTally(t *testing.T) {
	t.Parallel()
	var tl Tally
	l := NewLiveWindow(LiveOptions{Now: fixedClock(t0), Tally: &tl})
	if s := l.Snapshot(); s.InFlight != 0 {
		t.Errorf("in flight %d before any request", s.InFlight)
	}
	for range 3 {
		tl.Send()
	}
	if s := l.Snapshot(); s.InFlight != 3 {
		t.Errorf("in flight %d, want 3", s.InFlight)
	}
	tl.Returned()
	tl.Returned()
	r := okRecord(0, 0, 100, 10, 1000, 11, 0, 0)
	tl.Add(r)
	l.Add(r)
	w := okRecord(1, 0, 100, 10, 1000, 11, 0, 0)
	w.Phase, w.Error, w.Retried = PhaseWarmup, &Error{Code: 503}, true
	tl.Add(w)
	l.Add(w)
	if s := l.Snapshot(); s.InFlight != 1 || s.Profiling.OK != 1 || s.Warmup.Errors != 1 || s.Warmup.Retried != 1 || s.WindowSamples != 1 {
		t.Errorf("snapshot %+v, want 1 in flight, 1 success and 1 retried warmup attempt, each counted once", s)
	}
	alone := NewLiveWindow(LiveOptions{Now: fixedClock(t0)})
	alone.Add(r)
	if s := alone.Snapshot(); s.InFlight != 0 || s.Profiling.OK != 1 || tl.Counts().Profiling.OK != 1 {
		t.Errorf("a window of its own: %+v (the run's tally: %+v)", s, tl.Counts())
	}
}

// TestLiveWindowCountsByBucket: alone, the window counts every bucket and
// keeps only successes in its rates.
func TestLiveWindowCountsByBucket(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	l := NewLiveWindow(LiveOptions{Now: clk.Now})
	recs, ovf := fixtureRecords()
	for _, r := range append(recs, ovf) {
		l.Add(r)
	}
	clk.Advance(time.Second)
	s := l.Snapshot()
	if s.Profiling.OK != 5 || s.Profiling.Errors != 1 || s.Cancelled() != 1 || s.Warmup.OK != 1 || s.Warmup.Errors != 1 || s.Overflows() != 1 {
		t.Errorf("counts %+v", s)
	}
	if s.WindowSamples != 6 || !near(s.RequestsPerSec, 6) {
		t.Errorf("window: %d samples at %v req/s, want the 6 successes in 1 s", s.WindowSamples, s.RequestsPerSec)
	}
}

// recordingSink is a Sink of another package's kind: it keeps the ids.
type recordingSink struct {
	mu  sync.Mutex
	ids []string
}

func (s *recordingSink) Add(r *Record) {
	s.mu.Lock()
	s.ids = append(s.ids, r.XRequestID)
	s.mu.Unlock()
}

// TestTee: a Tee gives each record to every sink, passes on the writer's
// error, and its parts end as they would alone.
func TestTee(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := NewRecordWriter(dir, WriterOptions{Now: fixedClock(t0), BufferSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	a := NewAggregator(AggregatorOptions{})
	other := &recordingSink{}
	s := Tee(w, a, other)
	fs, ok := s.(interface{ Err() error })
	if !ok {
		t.Fatal("a Tee with a RecordWriter has no Err")
	}
	recs, ovf := fixtureRecords()
	for _, r := range append(recs, ovf) {
		s.Add(r)
	}
	if fs.Err() != nil || len(other.ids) != len(recs)+1 || a.Accounting().Sent != len(recs)+1 {
		t.Fatalf("err %v, other sink %d records, aggregator %+v", fs.Err(), len(other.ids), a.Accounting())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(readLines(t, filepath.Join(dir, FileRecords))); n != len(recs) {
		t.Errorf("%d lines, want %d", n, len(recs))
	}

	// A failing writer's error reaches the Tee's Err.
	w2, err := NewRecordWriter(t.TempDir(), WriterOptions{Now: fixedClock(t0), BufferSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	s2 := Tee(NewLiveWindow(LiveOptions{}), w2).(interface {
		Sink
		Err() error
	})
	w2.recF.Close() // the disk goes away
	s2.Add(okRecord(0, 0, 10, 1, 10, 3, 0, 0))
	if s2.Err() == nil {
		t.Error("the writer's error did not reach the Tee")
	}
	w2.Close()
}

// TestCollectorFinishDuringAdds: records added while Finish runs are
// either in every artifact or late, never in one and not another.
func TestCollectorFinishDuringAdds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := NewCollector(dir, CollectorOptions{Now: fixedClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	const lanes, per = 4, 500
	var wg sync.WaitGroup
	started := make(chan struct{}, lanes)
	for l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				c.Add(okRecord(l*per+i, 0, 10, 1, 10, 3, 0, 0))
				if i == per/10 {
					started <- struct{}{}
				}
			}
		}()
	}
	for range lanes {
		<-started
	}
	s, err := c.Finish(RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	lines := len(readLines(t, filepath.Join(dir, FileRecords)))
	if lines != s.RequestCount || lines+c.LateRecords() != lanes*per {
		t.Errorf("%d lines, %d in the aggregates, %d late: want lines = aggregates and lines + late = %d", lines, s.RequestCount, c.LateRecords(), lanes*per)
	}
}

// TestLiveTokenRateCountsTokensAsTheyArrive: three streams, each sending
// 20 tokens a second for 5 s (their token times known), none finished.
// With LiveOptions.Streamed the window's output rate is the 60 tokens/s
// that arrived; a request that then completes does not add its tokens a
// second time. Without it (the rate of completed requests' tokens, what
// the live view showed before) the same moment reads 0 tokens/s, and a
// completion puts its whole output into the window at once.
func TestLiveTokenRateCountsTokensAsTheyArrive(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	var streamed atomic.Int64
	l := NewLiveWindow(LiveOptions{Now: clk.Now, Streamed: streamed.Load})
	old := NewLiveWindow(LiveOptions{Now: clk.Now})
	l.StartProfiling(t0)
	old.StartProfiling(t0)
	// 3 streams × 20 tokens/s, one token every 50 ms per stream.
	for range 100 {
		clk.Advance(50 * time.Millisecond)
		streamed.Add(3)
		_ = l.Snapshot() // the live view samples every frame
	}
	s := l.Snapshot()
	if !near(s.OutputTokensPerSec, 60) || s.Window != 5*time.Second {
		t.Errorf("streamed: %.2f tokens/s over %v, want 60 over 5s", s.OutputTokensPerSec, s.Window)
	}
	if o := old.Snapshot(); o.OutputTokensPerSec != 0 {
		t.Errorf("fixture: the completed-request rate reads %.2f tokens/s with nothing completed", o.OutputTokensPerSec)
	}
	// One request completes (its tokens were counted as they came).
	recs, _ := fixtureRecords()
	var done *Record
	for _, r := range recs {
		if e := newEntry(r); e.b == BucketProfilingOK && Has(e.v.OSL) && e.v.OSL > 0 {
			done = r
			break
		}
	}
	if done == nil {
		t.Fatal("fixture: no successful profiling record")
	}
	l.Add(done)
	old.Add(done)
	if s := l.Snapshot(); !near(s.OutputTokensPerSec, 60) {
		t.Errorf("after a completion: %.2f tokens/s, want still 60", s.OutputTokensPerSec)
	}
	// A window later, with 20 tokens/s from one stream only.
	for range 200 {
		clk.Advance(50 * time.Millisecond)
		streamed.Add(1)
		_ = l.Snapshot()
	}
	if s := l.Snapshot(); !near(s.OutputTokensPerSec, 20) || s.Window < 9*time.Second {
		t.Errorf("one stream: %.2f tokens/s over %v, want 20 over the window (9–10 s)", s.OutputTokensPerSec, s.Window)
	}
}
