package run_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/run"
)

// TestSpecFailedRequestThreshold: Spec.FailedRequestThreshold is the
// engine's threshold (scenario's rule over the run's tally): a server that
// goes down after the warmup aborts the run, the Spec's Progress holds the
// run's accounting, and input_config records the fraction. A fraction
// out of range is an input error naming the field.
func TestSpecFailedRequestThreshold(t *testing.T) {
	t.Parallel()
	s := run.NewSpec()
	s.Corpus.Traces = dataset.Synthesize(dataset.SynthOptions{Seed: 1, Traces: 4, MinTurns: 6, MaxTurns: 12, TimeScale: 0.001})
	s.Replay.URL, s.Replay.Models = "sim://?zero-latency=true&fault-down-for=1h&fault-down-after-requests=4", []string{"demo"}
	s.Replay.Concurrency, s.Replay.Seed = 4, 7
	s.Replay.BenchmarkDuration, s.Replay.TraceIdleGapCap = 10*time.Second, time.Millisecond
	s.Replay.Progress = &replay.Progress{}
	s.OutputDir, s.NoPlot = t.TempDir(), true
	s.FailedRequestThreshold = 0.5

	bad := s
	bad.FailedRequestThreshold = 2
	var ie *run.InputError
	if _, err := run.Run(context.Background(), bad); !errors.As(err, &ie) || !strings.Contains(err.Error(), "Spec.FailedRequestThreshold") {
		t.Fatalf("a threshold of 2: %v, want an InputError naming Spec.FailedRequestThreshold", err)
	}

	out, err := run.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if res := out.Result; res.Aborted != replay.AbortFailedRequestThreshold || !strings.Contains(res.AbortMessage, "--failed-request-threshold 0.5") {
		t.Fatalf("aborted %q: %s", res.Aborted, res.AbortMessage)
	}
	if got := s.Replay.Progress.Counts().Accounting(); got != out.Result.Accounting {
		t.Errorf("the Spec's Progress counts %+v, the run's accounting is %+v", got, out.Result.Accounting)
	}
	agg, err := metrics.ReadAggregateFile(s.OutputDir)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := metrics.JSONFloat(agg.InputConfig["failed_request_threshold"]); !ok || v != 0.5 {
		t.Errorf("input_config.failed_request_threshold = %v, want 0.5", agg.InputConfig["failed_request_threshold"])
	}
}
