package metrics_test

import (
	"fmt"
	"log"
	"os"
	"time"

	"github.com/agentperf/agentperf/metrics"
)

func ExamplePercentile() {
	sorted := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	fmt.Println(metrics.Percentile(sorted, 50), metrics.Percentile(sorted, 90))
	// Output: 5.5 9.1
}

func ExampleCompute() {
	start := time.Date(2026, 8, 12, 14, 0, 0, 0, time.UTC).UnixNano()
	ms := int64(time.Millisecond)
	v := metrics.Compute(&metrics.Record{
		RequestStartNs: start,
		FirstChunkNs:   start + 250*ms,  // TTFT 250 ms
		LastChunkNs:    start + 1250*ms, // 100 more tokens over 1 s
		RequestEndNs:   start + 1260*ms,
		Usage:          &metrics.Usage{PromptTokens: 40000, CompletionTokens: 101, TotalTokens: 40101},
	})
	fmt.Printf("TTFT %.0f ms, latency %.0f ms, ITL %.0f ms, %.0f tok/s/user, ISL %.0f\n",
		v.TTFT, v.RequestLatency, v.ITL, v.OutputTPSPerUser, v.ISL)
	// Output: TTFT 250 ms, latency 1250 ms, ITL 10 ms, 100 tok/s/user, ISL 40000
}

func ExampleCollector() {
	dir, err := os.MkdirTemp("", "agentperf-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	c, err := metrics.NewCollector(dir, metrics.CollectorOptions{})
	if err != nil {
		log.Fatal(err)
	}
	start := time.Date(2026, 8, 12, 14, 0, 0, 0, time.UTC).UnixNano()
	for i := range 4 {
		s := start + int64(i)*int64(time.Second)
		c.Add(&metrics.Record{ // the engine calls Add from its lanes
			Phase: metrics.PhaseProfiling, RequestStartNs: s,
			FirstChunkNs: s + int64(100+100*i)*1e6, LastChunkNs: s + 2e9, RequestEndNs: s + 2e9,
			Usage:     &metrics.Usage{PromptTokens: 1000, CompletionTokens: 50, TotalTokens: 1050},
			HitBlocks: i, TotalBlocks: 4,
		})
	}
	sum, err := c.Finish(metrics.RunInfo{BenchmarkID: "example"})
	if err != nil {
		log.Fatal(err)
	}
	ttft, _ := sum.Metric("time_to_first_token")
	fmt.Printf("%d requests over %.1f s, TTFT p50 %.0f ms, theoretical hit %.1f%%\n",
		sum.RequestCount, sum.BenchmarkDuration, ttft.P50, sum.TheoreticalHitPct)
	// Output: 4 requests over 5.0 s, TTFT p50 250 ms, theoretical hit 37.5%
}

// ExampleTee combines the sinks a caller needs: here exact aggregates and
// the live window, without any file.
func ExampleTee() {
	agg := metrics.NewAggregator(metrics.AggregatorOptions{})
	live := metrics.NewLiveWindow(metrics.LiveOptions{})
	sink := metrics.Tee(agg, live) // what replay.Config.Sink takes
	start := time.Now().UnixNano()
	for i := range 3 {
		s := start + int64(i)*int64(time.Millisecond)
		r := &metrics.Record{Phase: metrics.PhaseProfiling, RequestStartNs: s,
			FirstChunkNs: s + int64(100+100*i)*1e6, LastChunkNs: s + 1e9, RequestEndNs: s + 1e9,
			Usage: &metrics.Usage{PromptTokens: 1000, CompletionTokens: 50, TotalTokens: 1050}}
		if i == 2 {
			r.Error = &metrics.Error{Code: 503, Type: "Service Unavailable", Category: metrics.CategoryHTTP}
		}
		sink.Add(r)
	}
	st := live.Snapshot()
	fmt.Printf("live: %d ok, %d errors\n", st.Profiling.OK, st.Profiling.Errors)
	sum, err := agg.Summary(metrics.RunInfo{})
	if err != nil {
		log.Fatal(err)
	}
	ttft, _ := sum.Metric("time_to_first_token")
	fmt.Printf("aggregates: %d requests, TTFT avg %.0f ms, %d error\n", sum.RequestCount, ttft.Avg, sum.ErrorRequestCount)
	// Output:
	// live: 2 ok, 1 errors
	// aggregates: 2 requests, TTFT avg 150 ms, 1 error
}
