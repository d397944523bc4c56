package metrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCutToLastLine: a stream whose write failed part-way is cut back to
// its last complete line, whatever the size of the torn tail.
func TestCutToLastLine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 200<<10) // a tail longer than one read
	for _, tc := range []struct{ in, want string }{
		{"a\nb\n", "a\nb\n"},
		{"a\nb\nc", "a\nb\n"},
		{"a\n" + long, "a\n"},
		{long, ""},
		{"", ""},
	} {
		p := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(p, []byte(tc.in), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := cutToLastLine(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if b, _ := os.ReadFile(p); string(b) != tc.want {
			t.Errorf("cut %d bytes: got %d bytes, want %d", len(tc.in), len(b), len(tc.want))
		}
	}
}

// TestCollectorReserve: the reserve file is there while the run writes
// and gone after Finish; on a write error it is given up at once.
func TestCollectorReserve(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := NewCollector(dir, CollectorOptions{Now: fixedClock(t0), ReserveBytes: 100 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, FileReserve)); err != nil || st.Size() != 100<<10 {
		t.Fatalf("reserve: %v", err)
	}
	c.Add(okRecord(0, 0, 10, 1, 10, 3, 0, 0))
	if c.Err() != nil {
		t.Fatal(c.Err())
	}
	if _, err := c.Finish(RunInfo{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, FileReserve)); !os.IsNotExist(err) {
		t.Errorf("reserve left after Finish: %v", err)
	}

	dir = t.TempDir()
	c, err = NewCollector(dir, CollectorOptions{Now: fixedClock(t0), ReserveBytes: 4 << 10, BufferSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	c.w.recF.Close() // the disk goes away
	c.Add(okRecord(0, 0, 10, 1, 10, 3, 0, 0))
	if c.Err() == nil {
		t.Fatal("write error not reported")
	}
	if _, err := os.Stat(filepath.Join(dir, FileReserve)); !os.IsNotExist(err) {
		t.Errorf("reserve kept after a write error: %v", err)
	}
	c.Finish(RunInfo{})
}

// TestEstimateArtifactBytes: the estimate grows with lanes and duration
// and has its documented fixed part.
func TestEstimateArtifactBytes(t *testing.T) {
	t.Parallel()
	if got := EstimateArtifactBytes(0, 0); got != estimateFixedBytes {
		t.Errorf("fixed part %d", got)
	}
	// 32 lanes for an hour: 2 MB + 28.8 MB of server metrics + 57.6 MB of records.
	if got, want := EstimateArtifactBytes(32, time.Hour), int64(2<<20+8<<10*3600+32*3600*0.25*2048); got != want {
		t.Errorf("32 lanes, 1 h: %d, want %d", got, want)
	}
}

// TestFreeBytes reads the free space of a directory.
func TestFreeBytes(t *testing.T) {
	t.Parallel()
	n, err := FreeBytes(t.TempDir())
	if err != nil {
		t.Skipf("not supported here: %v", err)
	}
	if n <= 0 {
		t.Errorf("free bytes %d", n)
	}
}

// TestReserveForHoldsTheAggregates: the reserve covers what Finish writes
// (the aggregate JSON and CSV, and the timeslice files) for a run of the
// given shape, measured on a real collector: a reserve smaller than the
// aggregate (a quarter of a 100 KiB disk was) left a full disk without
// one.
func TestReserveForHoldsTheAggregates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		lanes  int
		d      time.Duration
		slice  time.Duration
		reqs   int
		errors int
	}{
		{"small run", 4, 10 * time.Second, 0, 40, 0},
		{"with timeslices", 8, 20 * time.Second, time.Second, 200, 5},
		{"many lanes", 1024, 10 * time.Second, time.Second, 2000, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c, err := NewCollector(dir, CollectorOptions{SliceDuration: tc.slice})
			if err != nil {
				t.Fatal(err)
			}
			base := time.Date(2026, 8, 12, 14, 0, 0, 0, time.UTC)
			step := tc.d / time.Duration(tc.reqs)
			for i := range tc.reqs {
				start := base.Add(time.Duration(i) * step).UnixNano()
				r := &Record{Phase: PhaseProfiling, RequestStartNs: start, FirstChunkNs: start + 1e8, SecondChunkNs: start + 11e7,
					LastChunkNs: start + 2e8, RequestEndNs: start + 201e6, Usage: &Usage{PromptTokens: 1000, CompletionTokens: 11, TotalTokens: 1011}}
				if i < tc.errors {
					r.Error = &Error{Code: 500 + i, Type: "Internal", Message: strings.Repeat("x", 200) + string(rune('a'+i%26))}
				}
				c.Add(r)
			}
			turns := make([]int, tc.lanes)
			info := RunInfo{BenchmarkID: "b", Accounting: Accounting{Sent: tc.reqs, ProfilingOK: tc.reqs - tc.errors, ProfilingErrors: tc.errors},
				ProfilingStart: base, ProfilingEnd: base.Add(tc.d), Concurrency: tc.lanes, Extra: map[string]any{"start_turns": turns}}
			if _, err := c.Finish(info); err != nil {
				t.Fatal(err)
			}
			var written int64
			for _, f := range []string{FileAggregateJSON, FileAggregateCSV, FileTimeslicesJSON, FileTimeslicesCSV} {
				if st, err := os.Stat(filepath.Join(dir, f)); err == nil {
					written += st.Size()
				}
			}
			if r := ReserveFor(tc.lanes, tc.d, tc.slice); r < written {
				t.Errorf("ReserveFor = %d bytes, but Finish wrote %d", r, written)
			}
		})
	}
}
