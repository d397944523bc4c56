package plot

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestReadRequestsLines: the three drawn metrics are read as {value, unit}
// objects or bare numbers, a missing or null one is NaN, the other metrics
// are ignored, a line longer than the reader's buffer is read whole, and a
// line that does not decode is left out and counted in one warning.
func TestReadRequestsLines(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 200<<10) // longer than the 64 KiB read buffer
	lines := []string{
		`{"metadata":{"request_start_ns":1,"request_end_ns":2,"benchmark_phase":"warmup"},"metrics":{"request_latency":{"value":5.5,"unit":"ms"},"time_to_first_token":{"value":1.5,"unit":"ms"},"inter_token_latency":{"value":0.25,"unit":"ms"},"output_token_count":{"value":17,"unit":"tokens"}}}`,
		`{"metadata":{"request_start_ns":3,"request_end_ns":4},"metrics":{"request_latency":7,"time_to_first_token":null}}`,
		`not json`,
		`{"metadata":{"request_start_ns":5,"request_end_ns":6,"benchmark_phase":"profiling","was_cancelled":true,"note":"` + long + `"},"metrics":{"request_latency":{"value":9,"unit":"ms"}}}`,
		`{"metadata":{"request_start_ns":7,"request_end_ns":8,"benchmark_phase":"profiling"},"metrics":{},"error":{"code":500,"message":"boom"}}`,
		``,
		`{"metadata":{"request_start_ns":9,"request_end_ns":10,"benchmark_phase":"profiling"},"error":null}`,
	}
	pts, warnings, err := readRequests(strings.NewReader(strings.Join(lines, "\n")), "records.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	nan := math.NaN()
	want := []RequestPoint{
		{StartNs: 1, EndNs: 2, TTFTms: 1.5, LatencyMs: 5.5, ITLms: 0.25, OK: true, Phase: "warmup"},
		{StartNs: 3, EndNs: 4, TTFTms: nan, LatencyMs: 7, ITLms: nan, OK: true, Phase: "profiling"},
		{StartNs: 5, EndNs: 6, TTFTms: nan, LatencyMs: 9, ITLms: nan, OK: false, Phase: "profiling"},
		{StartNs: 7, EndNs: 8, TTFTms: nan, LatencyMs: nan, ITLms: nan, OK: false, Phase: "profiling"},
		{StartNs: 9, EndNs: 10, TTFTms: nan, LatencyMs: nan, ITLms: nan, OK: true, Phase: "profiling"},
	}
	if len(pts) != len(want) {
		t.Fatalf("%d points, want %d: %+v", len(pts), len(want), pts)
	}
	same := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
	for i, w := range want {
		g := pts[i]
		if g.StartNs != w.StartNs || g.EndNs != w.EndNs || g.OK != w.OK || g.Phase != w.Phase ||
			!same(g.TTFTms, w.TTFTms) || !same(g.LatencyMs, w.LatencyMs) || !same(g.ITLms, w.ITLms) {
			t.Errorf("point %d = %+v, want %+v", i, g, w)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "1 line(s)") || !strings.Contains(warnings[0], "line 3") {
		t.Errorf("warnings = %q, want one naming 1 bad line at line 3", warnings)
	}
}

// TestReadRequestsAllocations: reading records back allocates per line
// far less than the file's size (it ran at the end of a run, on top of
// the run's heap: the line is not copied and no map of the metrics is
// built).
func TestReadRequestsAllocations(t *testing.T) {
	var sb strings.Builder
	const n = 200
	for i := range n {
		fmt.Fprintf(&sb, `{"metadata":{"x_request_id":"%d","request_start_ns":%d,"request_end_ns":%d,"benchmark_phase":"profiling","was_cancelled":false},"metrics":{`, i, i, i+1)
		for m := range 20 {
			fmt.Fprintf(&sb, `"metric_%d":{"value":%d.5,"unit":"ms"},`, m, m)
		}
		sb.WriteString(`"request_latency":{"value":9,"unit":"ms"},"time_to_first_token":{"value":1,"unit":"ms"},"inter_token_latency":{"value":0.5,"unit":"ms"}}}` + "\n")
	}
	text := sb.String()
	allocs := testing.AllocsPerRun(5, func() {
		pts, _, err := readRequests(strings.NewReader(text), "records.jsonl")
		if err != nil || len(pts) != n {
			t.Fatalf("%d points, %v", len(pts), err)
		}
	})
	// Measured: 7 per line with metrics.DecodeRecordLine (the decoder's
	// state and the record's strings); encoding/json into the three
	// metrics took 27, a map of every metric per line 202.
	if perLine := allocs / n; perLine > 15 {
		t.Errorf("%.0f allocations per record line, want at most 15", perLine)
	}
}
