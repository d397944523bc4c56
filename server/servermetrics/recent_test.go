package servermetrics

import (
	"fmt"
	"testing"
	"time"
)

// TestRecentFollowsTheWindow checks that the recent hit rate reflects the
// last window of scrapes, not the run so far: a server that hit 80 % of its
// queries and then stops hitting (KV thrashing) must show 0 % at once.
func TestRecentFollowsTheWindow(t *testing.T) {
	t.Parallel()
	// queries +100 per scrape; hits +80 per scrape up to k=8, then +0;
	// preemptions +2 per scrape from k=6.
	page := func(k int) string {
		hits := 80 * min(k, 8)
		pre := 2 * max(0, k-6)
		return fmt.Sprintf("# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total %d\n"+
			"# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total %d\n"+
			"# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total %d\n", 100*k, hits, pre)
	}
	r := newRig(t, page)
	s := New(Config{URLs: []string{r.url()}, Clock: r.clock})
	if rf := s.Recent(time.Second); rf.GPUPrefixHitRateValid || rf.PreemptionsValid {
		t.Fatalf("recent figures before any scrape: %+v", rf)
	}
	for k := 0; k <= 8; k++ {
		r.k.Store(int64(k))
		s.Scrape(t.Context())
	}
	rf := s.Recent(time.Second) // 4 steps of 250 ms: k 4..8
	if !rf.GPUPrefixHitRateValid || !near(rf.GPUPrefixHitRate, 0.8) || rf.Window != time.Second {
		t.Errorf("while hitting: %+v, want 0.8 over 1 s", rf)
	}
	for k := 9; k <= 12; k++ {
		r.k.Store(int64(k))
		s.Scrape(t.Context())
	}
	rf = s.Recent(time.Second)
	if !rf.GPUPrefixHitRateValid || rf.GPUPrefixHitRate != 0 {
		t.Errorf("after the hits stopped: %+v, want 0 over the window", rf)
	}
	if lf := s.Live(); !near(lf.GPUPrefixHitRate, 640.0/1200) {
		t.Errorf("Live (since the start) = %v, want %v", lf.GPUPrefixHitRate, 640.0/1200)
	}
	if !rf.PreemptionsValid || rf.Preemptions != 8 || rf.PreemptionsTotal != 12 {
		t.Errorf("preemptions %+v, want 8 over the window and 12 in all", rf)
	}
}
