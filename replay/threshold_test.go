package replay

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/scenario"
)

// withThreshold gives cfg the failed-request threshold at frac as package
// profile does: scenario's rule, reading the run's tally.
func withThreshold(cfg *Config, frac float64) {
	if cfg.Progress == nil {
		cfg.Progress = new(Progress)
	}
	cfg.Threshold = scenario.NewThreshold(frac, &cfg.Progress.Tally)
}

// recordingThreshold is a Threshold that checks how the engine feeds it
// and aborts the run at its abortAt-th outcome (0: never).
type recordingThreshold struct {
	tally   *metrics.Tally
	abortAt int

	mu       sync.Mutex
	sent     int
	done     map[int]metrics.Bucket
	problems []string
}

func (r *recordingThreshold) Sent() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent++
	return r.sent
}

func (r *recordingThreshold) Done(seq int, b metrics.Bucket) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.done[seq]; dup || seq < 1 || seq > r.sent {
		r.problems = append(r.problems, fmt.Sprintf("Done(%d) of %d sent, done before: %v", seq, r.sent, dup))
	}
	r.done[seq] = b
	if b == metrics.BucketWarmupOK || b == metrics.BucketWarmupError || b == metrics.BucketUnset {
		r.problems = append(r.problems, fmt.Sprintf("request %d: bucket %s", seq, b))
	}
	if p := r.tally.Counts().Profiling; p.Total() < len(r.done) {
		r.problems = append(r.problems, fmt.Sprintf("request %d judged before its record was counted (%d counted, %d done)", seq, p.Total(), len(r.done)))
	}
	return len(r.done) == r.abortAt, "the test's threshold fired"
}

// TestThresholdIsGivenEveryProfilingRequest: the engine gives the
// threshold it was given (Config.Threshold, any implementation) every
// profiling request once, numbered in send order, with its record's
// bucket once the record is in the run's tally, and no warmup request;
// when it fires, the run is aborted with its message.
func TestThresholdIsGivenEveryProfilingRequest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		abortAt int
	}{{"runs to the end", 0}, {"fires", 6}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t)
			srv.fail = func(n int64, _ []byte) (int, string) {
				switch {
				case n > 3 && n%5 == 0:
					return 500, `{"error":{"message":"internal error","type":"InternalServerError","code":500}}`
				case n > 3 && n%7 == 0:
					return 400, `{"error":{"message":"This model's maximum context length is 1000 tokens. However, your request has 5000 input tokens.","type":"BadRequestError","code":400}}`
				}
				return 0, ""
			}
			sink, ovf := &memSink{}, &memSink{}
			cfg := testConfig(t, srv.URL, testCorpus(t, 5), sink, ovf)
			cfg.BenchmarkDuration = 400 * time.Millisecond
			cfg.Progress = new(Progress)
			th := &recordingThreshold{tally: &cfg.Progress.Tally, abortAt: tc.abortAt, done: map[int]metrics.Bucket{}}
			cfg.Threshold = th
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkAccounting(t, res, srv, sink, ovf)
			th.mu.Lock()
			defer th.mu.Unlock()
			for _, p := range th.problems {
				t.Error(p)
			}
			var got metrics.PhaseCounts
			for seq := 1; seq <= th.sent; seq++ {
				switch b, ok := th.done[seq]; {
				case !ok:
					t.Errorf("request %d of %d sent was never judged", seq, th.sent)
				case b == metrics.BucketProfilingOK:
					got.OK++
				case b == metrics.BucketProfilingError:
					got.Errors++
				case b == metrics.BucketOverflow:
					got.Overflows++
				case b == metrics.BucketCancelled:
					got.Cancelled++
				}
			}
			if want := cfg.Progress.Counts().Profiling; got != want || got.Errors == 0 || got.Overflows == 0 {
				t.Errorf("the threshold judged %+v, the run's profiling requests were %+v; want the same, with errors and overflows", got, want)
			}
			fired := res.Aborted == AbortFailedRequestThreshold && res.AbortMessage == "the test's threshold fired"
			if fired != (tc.abortAt > 0) {
				t.Errorf("aborted %q (%s), want an abort: %v", res.Aborted, res.AbortMessage, tc.abortAt > 0)
			}
		})
	}
}
