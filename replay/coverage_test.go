package replay

import (
	"context"
	"testing"
	"time"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/timing"
)

// TestLastContentCountsCancelledStreams: the coverage rule's third signal
// (Result.LastContent) is the last streamed content of any profiling
// request, a request cancelled at the end of the grace period included:
// with every profiling stream longer than the duration and its grace,
// no request succeeds (no TTFT or ITL observation) yet the content the
// server streamed until the cancel is the signal, and it is the latest
// content time of the profiling records.
func TestLastContentCountsCancelledStreams(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Model, cfg.DecodeBaseMs, cfg.PrefillTokensPerSec = "m", 25, 1e7
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	sink, ovf := &memSink{}, &memSink{}
	c := testConfig(t, srv.URL, testCorpus(t, 4), sink, ovf)
	c.Generation = timing.V10
	c.WarmupRequestsPerLane = 0
	c.BenchmarkDuration = 600 * time.Millisecond
	c.GracePeriod = 400 * time.Millisecond
	c.SynthesisMaxOSL = 0
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	cancelledWithContent := 0
	for _, r := range sink.records() {
		if r.Phase != metrics.PhaseProfiling {
			continue
		}
		if r.LastChunkNs > last {
			last = r.LastChunkNs
		}
		if r.Cancelled && r.LastChunkNs > 0 {
			cancelledWithContent++
		}
	}
	if cancelledWithContent == 0 {
		t.Fatalf("fixture: no profiling stream outlasted the grace period (%+v)", res.Accounting)
	}
	if res.LastContent.IsZero() || res.LastContent.UnixNano() != last {
		t.Fatalf("LastContent %v, want the profiling records' last content %v", res.LastContent, time.Unix(0, last))
	}
	if !res.LastContent.After(res.ProfilingStart) {
		t.Errorf("LastContent %v is not after the profiling start %v", res.LastContent, res.ProfilingStart)
	}
	if res.Accounting.ProfilingOK == 0 && !res.LastTTFT.IsZero() {
		t.Errorf("no profiling success, yet a TTFT observation at %v", res.LastTTFT)
	}
	t.Logf("%d profiling streams cancelled with content; last content %v after the profiling start (duration %v + grace %v)",
		cancelledWithContent, res.LastContent.Sub(res.ProfilingStart), c.BenchmarkDuration, c.GracePeriod)
}
