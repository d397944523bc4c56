package plot

import "github.com/agentperf/agentperf/metrics"

// PointsFrom builds the request points of Input from what a run's
// aggregates hold (metrics.Collector.EachRequest), without reading the
// record file back.
func PointsFrom(each func(func(metrics.RequestRow))) []RequestPoint {
	var out []RequestPoint
	each(func(r metrics.RequestRow) {
		phase := string(metrics.PhaseProfiling)
		if r.Warmup {
			phase = string(metrics.PhaseWarmup)
		}
		out = append(out, RequestPoint{StartNs: r.StartNs, EndNs: r.EndNs, TTFTms: r.TTFT, LatencyMs: r.Latency, ITLms: r.ITL, OK: r.OK, Phase: phase})
	})
	return out
}
