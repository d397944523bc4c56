package plot

import "github.com/agentperf/agentperf/metrics"

// PointsFromRecords builds the request points of Input from engine
// records, with the per-record metrics of metrics.Compute (one struct per
// request; absent values NaN).
func PointsFromRecords(recs []metrics.Record) []RequestPoint {
	out := make([]RequestPoint, 0, len(recs))
	for i := range recs {
		r := &recs[i]
		v := metrics.Compute(r)
		out = append(out, RequestPoint{
			StartNs:   r.RequestStartNs,
			EndNs:     r.RequestEndNs,
			TTFTms:    v.TTFT,
			LatencyMs: v.RequestLatency,
			ITLms:     v.ITL,
			OK:        r.Error == nil && !r.Cancelled && !r.ContextOverflow,
			Phase:     string(r.Phase),
		})
	}
	return out
}

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
