package plot

import (
	"testing"

	"github.com/agentperf/agentperf/metrics"
)

// TestPointOKFollowsTheBucket: a point is drawn as a success when its
// record is one (metrics.Bucket.OK). A record flagged
// context_overflow_skip without an error object used to be drawn as a
// success (only the error and was_cancelled were read); it is now drawn
// as a failure.
func TestPointOKFollowsTheBucket(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		line string
		ok   bool
	}{
		{`{"metadata":{"request_end_ns":2,"request_start_ns":1,"benchmark_phase":"profiling"},"metrics":{}}`, true},
		{`{"metadata":{"request_end_ns":2,"request_start_ns":1,"benchmark_phase":"warmup"},"metrics":{}}`, true},
		{`{"metadata":{"request_end_ns":2,"request_start_ns":1,"benchmark_phase":"profiling","context_overflow_skip":true},"metrics":{}}`, false},
		{`{"metadata":{"request_end_ns":2,"request_start_ns":1,"benchmark_phase":"profiling","was_cancelled":true},"metrics":{}}`, false},
		{`{"metadata":{"request_end_ns":2,"request_start_ns":1,"benchmark_phase":"profiling"},"metrics":{},"error":{"code":500}}`, false},
	} {
		var l metrics.RecordLine
		p, ok := parseRecordLine([]byte(c.line), &l)
		if !ok || p.OK != c.ok {
			t.Errorf("%s: parsed %v, OK %v; want OK %v", c.line, ok, p.OK, c.ok)
		}
	}
}
