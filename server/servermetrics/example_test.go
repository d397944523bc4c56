package servermetrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"time"

	"github.com/agentperf/agentperf/server/servermetrics"
)

// A scraper around a run: baseline, profiling marks, final scrape, export.
// The fake server's counters grow by 100 queried and 40 hit tokens per
// scrape.
func Example() {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := n.Add(1)
		fmt.Fprintf(w, "# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{engine=\"0\"} %d\n", 100*k)
		fmt.Fprintf(w, "# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{engine=\"0\"} %d\n", 40*k)
	}))
	defer srv.Close()

	ctx := context.Background()
	s := servermetrics.New(servermetrics.Config{URLs: servermetrics.URLsFrom(srv.URL, nil, os.Getenv), SliceDuration: time.Second})
	s.Baseline(ctx) // before warmup
	s.MarkProfilingStart(time.Now())
	s.Scrape(ctx) // Run(ctx) does this every Interval
	s.MarkProfilingEnd(time.Now())
	s.Final(ctx)

	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	d, err := s.Export(dir)
	if err != nil {
		panic(err)
	}
	fmt.Printf("GPU prefix-cache hit rate %.2f (valid %v), %d scrapes, %d failed\n",
		d.GPUPrefixHitRate, d.GPUPrefixHitRateValid, d.Scrapes, d.ScrapeFailures)
	// Output: GPU prefix-cache hit rate 0.40 (valid true), 3 scrapes, 0 failed
}
