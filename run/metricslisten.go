package run

import (
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/promexport"
)

// plugMetricsListen plugs the live Prometheus endpoint (Spec.MetricsListen)
// into the run at its edge, through the Spec's own extension points: the
// exporter is one more record sink (Replay.Sink) and one more observer
// (Observers), and reads the run's tally. It serves until Run returns (the
// artifacts written); Outcome.Metrics keeps its final state. Nothing
// without MetricsListen. It is a live output (liveOutputs).
func plugMetricsListen(r *running) error {
	s := &r.s
	if s.MetricsListen == "" {
		return nil
	}
	o := promexport.Options{Tally: &r.progress.Tally, Threshold: s.FailedRequestThreshold, Logf: r.lg.Printf}
	if s.Replay.Shard.Sharded() {
		o.Shard = s.Replay.Shard.String()
	}
	e := promexport.New(o)
	addr, err := e.Listen(s.MetricsListen)
	if err != nil {
		return err
	}
	r.prom = e
	r.onClose(func() { e.Close() })
	r.lg.Printf("metrics: serving the run's figures at http://%s/metrics (Prometheus exposition format)", addr)
	s.Observers = append(s.Observers, e)
	if s.Replay.Sink != nil {
		s.Replay.Sink = metrics.Tee(s.Replay.Sink, e)
	} else {
		s.Replay.Sink = e
	}
	s.Replay.Progress = r.progress
	return nil
}
