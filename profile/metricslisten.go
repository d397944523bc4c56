package profile

import (
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/promexport"
	"github.com/agentperf/agentperf/replay"
)

// plugMetricsListen plugs the live Prometheus endpoint (Spec.MetricsListen)
// into the run at its edge, through the Spec's own extension points: the
// exporter is one more record sink (Replay.Sink) and one more observer
// (Observers), and reads the run's tally. It serves until Run returns (the
// artifacts written); Outcome.Metrics keeps its final state. It returns
// nil without MetricsListen.
func plugMetricsListen(s *Spec, progress *replay.Progress, lg *runLog) (*promexport.Exporter, error) {
	if s.MetricsListen == "" {
		return nil, nil
	}
	o := promexport.Options{Tally: &progress.Tally, Threshold: s.FailedRequestThreshold, Logf: lg.Printf}
	if s.Replay.Shard.Sharded() {
		o.Shard = s.Replay.Shard.String()
	}
	e := promexport.New(o)
	addr, err := e.Listen(s.MetricsListen)
	if err != nil {
		return nil, err
	}
	lg.Printf("metrics: serving the run's figures at http://%s/metrics (Prometheus exposition format)", addr)
	s.Observers = append(s.Observers, e)
	if s.Replay.Sink != nil {
		s.Replay.Sink = metrics.Tee(s.Replay.Sink, e)
	} else {
		s.Replay.Sink = e
	}
	s.Replay.Progress = progress
	return e, nil
}
