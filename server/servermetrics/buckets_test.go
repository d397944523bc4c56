package servermetrics

import (
	"fmt"
	"testing"
)

// TestHistogramBucketsLongRunWithReset runs far more scrapes than the
// bucket ring holds, with a server restart (histogram reset) inside the
// profiling window, and checks the bucket deltas against hand-computed
// values, whichever way the profiling start is marked: after a later
// scrape exists (pinned from the ring) or before the scrape stamped at it
// arrives (pinned on arrival). Bucket memory stays constant.
func TestHistogramBucketsLongRunWithReset(t *testing.T) {
	t.Parallel()
	// le=0.1 grows 2/scrape, +Inf and count 3/scrape; restart at k=40.
	page := func(k int) string {
		n := k
		if k >= 40 {
			n = k - 39
		}
		return fmt.Sprintf("# TYPE h histogram\nh_bucket{le=\"0.1\"} %d\nh_bucket{le=\"+Inf\"} %d\nh_sum %d\nh_count %d\n", 2*n, 3*n, 3*n, 3*n)
	}
	for _, markLate := range []bool{true, false} {
		t.Run(fmt.Sprintf("markAfterNextScrape=%v", markLate), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, page)
			s := New(Config{URLs: []string{r.url()}, Clock: r.clock})
			for k := 0; k <= 60; k++ {
				r.k.Store(int64(k))
				if k == 20 && !markLate {
					s.MarkProfilingStart(r.at(20))
				}
				s.Scrape(t.Context())
				if k == 21 && markLate {
					s.MarkProfilingStart(r.at(20))
				}
				if k == 55 {
					s.MarkProfilingEnd(r.at(55).Add(step / 2))
				}
			}
			ex := s.Snapshot()
			h := ex.Metrics["h"].Series[0]
			// k=20→56: 19 steps before the restart, the post-restart value
			// at k=40, then 16 steps.
			wantLow, wantAll := int64(2*19+2+2*16), int64(3*19+3+3*16)
			if *h.Stats.Count != float64(wantAll) || h.Buckets["0.1"] != wantLow || h.Buckets["+Inf"] != wantAll {
				t.Errorf("count %v buckets %v, want count %d, 0.1=%d, +Inf=%d", *h.Stats.Count, h.Buckets, wantAll, wantLow, wantAll)
			}
			if h.Stats.P50Estimate == nil {
				t.Error("p50_estimate missing")
			}
			w := ex.WarmupMetrics["h"].Series[0]
			if w.Buckets["0.1"] != 40 || w.Buckets["+Inf"] != 60 {
				t.Errorf("warmup buckets %v, want 0.1=40 +Inf=60", w.Buckets)
			}
			s.mu.Lock()
			for _, f := range s.st.families {
				for _, sd := range f.series {
					for _, b := range sd.buckets {
						if len(b.pinned) > 4 {
							t.Errorf("bucket keeps %d pinned values; memory must not grow with the run", len(b.pinned))
						}
					}
				}
			}
			s.mu.Unlock()
		})
	}
}

// TestRetainedFloatsPerScrape pins the memory bound: per scrape, one float
// per gauge/counter series and two per histogram series (sum, count),
// nothing per bucket.
func TestRetainedFloatsPerScrape(t *testing.T) {
	t.Parallel()
	p := newParser()
	st := newStore([]string{"http://a/metrics"})
	const scrapes = 200
	for k := range scrapes {
		fams, err := p.parse([]byte(vllmPage(k)))
		if err != nil {
			t.Fatal(err)
		}
		st.add(0, int64(k)*333e6, fams)
	}
	var floats, want, buckets int
	for _, f := range st.families {
		for _, sd := range f.series {
			floats += len(sd.vals) + len(sd.sum) + len(sd.count)
			buckets += len(sd.buckets)
			if f.typ == typeHistogram {
				want += 2 * scrapes
			} else {
				want += scrapes
			}
		}
	}
	if floats != want || buckets == 0 {
		t.Errorf("retained %d floats over %d scrapes, want %d (buckets %d kept in constant memory)", floats, scrapes, want, buckets)
	}
}
