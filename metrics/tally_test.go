package metrics

import (
	"sync"
	"testing"
)

// TestTallyCountsEveryBucketOnce: each finished request is counted once,
// in its bucket and phase; the accounting adds up, and the figures the
// live view and progress read derive from the same slots.
func TestTallyCountsEveryBucketOnce(t *testing.T) {
	t.Parallel()
	errRec := func(p Phase) *Record {
		return &Record{Phase: p, Error: &Error{Type: "Internal Server Error", Code: 500}}
	}
	retried := errRec(PhaseWarmup)
	retried.Retried = true
	recs := []*Record{
		{Phase: PhaseProfiling}, {Phase: PhaseProfiling}, {Phase: PhaseProfiling}, // 3 profiling ok
		errRec(PhaseProfiling),                     // profiling error
		{Phase: PhaseWarmup}, {Phase: PhaseWarmup}, // 2 warmup ok
		errRec(PhaseWarmup), retried, retried, // warmup errors, 2 of them retried attempts
		{Phase: PhaseProfiling, ContextOverflow: true, Error: &Error{Code: 400}}, // overflows
		{Phase: PhaseWarmup, ContextOverflow: true, Error: &Error{Code: 400}},
		{Phase: PhaseWarmup, ContextOverflow: true, Error: &Error{Code: 400}},
		{Phase: PhaseProfiling, Cancelled: true}, // cancellations
		{Phase: PhaseWarmup, Error: &Error{Category: CategoryCancelled}},
		{Phase: PhaseProfiling, Bucket: BucketWarmupOK}, // a caller's bucket wins over the fields
	}
	var tl Tally
	for _, r := range recs {
		tl.Send()
		tl.Returned()
		tl.Add(r)
	}
	tl.Send() // one still in flight
	c := tl.Counts()
	want := Counts{Sent: len(recs) + 1, InFlight: 1,
		Profiling: PhaseCounts{OK: 3, Errors: 1, Overflows: 1, Cancelled: 1},
		Warmup:    PhaseCounts{OK: 3, Errors: 3, Overflows: 2, Cancelled: 1, Retried: 2}}
	if c != want {
		t.Fatalf("Counts() = %+v\nwant      %+v", c, want)
	}
	if a := c.Accounting(); a != (Accounting{Sent: 16, ProfilingOK: 3, ProfilingErrors: 1, WarmupOK: 3, WarmupErrors: 3, Overflows: 3, Cancelled: 2}) {
		t.Fatalf("Accounting() = %+v", a)
	}
	if err := c.Accounting().Check(); err == nil {
		t.Fatal("one request in flight: the accounting must not add up yet")
	}
	// The warmup's 2 retried attempts are records, not requests done; a
	// cancelled profiling request is not a profiling request done.
	if c.WarmupDone() != 7 || c.ProfilingDone() != 5 || c.Errors() != 4 || c.Overflows() != 3 || tl.InFlight() != 1 {
		t.Fatalf("warmup done %d, profiling done %d, errors %d, overflows %d, in flight %d; want 7, 5, 4, 3, 1",
			c.WarmupDone(), c.ProfilingDone(), c.Errors(), c.Overflows(), tl.InFlight())
	}
	tl.Returned()
	tl.Count(BucketUnset, PhaseProfiling, false) // not a bucket: not counted
	tl.Add(&Record{Phase: PhaseProfiling})
	if err := tl.Counts().Accounting().Check(); err != nil {
		t.Fatalf("every request sent is counted once: %v", err)
	}
}

// TestTallyConcurrent: lanes updating one tally at once lose nothing,
// and a reader meanwhile never sees more finished requests than were
// sent, nor a negative in-flight count.
func TestTallyConcurrent(t *testing.T) {
	t.Parallel()
	const lanes, per = 8, 2000
	var tl Tally
	stop := make(chan struct{})
	var bad sync.Once
	var badCounts Counts
	var rd sync.WaitGroup
	rd.Add(1)
	go func() {
		defer rd.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if c := tl.Counts(); c.Accounting().Total() > c.Sent || c.InFlight < 0 {
				bad.Do(func() { badCounts = c })
			}
		}
	}()
	var wg sync.WaitGroup
	for l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				tl.Send()
				tl.Returned()
				r := Record{Phase: PhaseProfiling}
				if (l+i)%4 == 0 {
					r.Phase = PhaseWarmup
				}
				if i%10 == 0 {
					r.Error = &Error{Code: 503}
				}
				tl.Add(&r)
			}
		}()
	}
	wg.Wait()
	close(stop)
	rd.Wait()
	if badCounts != (Counts{}) {
		t.Errorf("a reader saw %+v: more finished than sent, or a negative in-flight count", badCounts)
	}
	c := tl.Counts()
	if err := c.Accounting().Check(); err != nil || c.Sent != lanes*per || c.InFlight != 0 {
		t.Fatalf("after %d requests: %+v (%v)", lanes*per, c, err)
	}
	if c.Errors() != lanes*per/10 {
		t.Fatalf("%d errors, want %d", c.Errors(), lanes*per/10)
	}
}

// BenchmarkTally measures the engine's updates of one request: Send,
// Returned and Add of a classified record, from one goroutine and from 8
// per core at once.
func BenchmarkTally(b *testing.B) {
	r := &Record{Phase: PhaseProfiling, Bucket: BucketProfilingOK}
	b.Run("serial", func(b *testing.B) {
		var tl Tally
		b.ReportAllocs()
		for b.Loop() {
			tl.Send()
			tl.Returned()
			tl.Add(r)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		var tl Tally
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				tl.Send()
				tl.Returned()
				tl.Add(r)
			}
		})
	})
}
