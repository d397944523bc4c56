package run

import (
	"testing"

	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/text/prompttext"
)

// TestCacheBustReachesTheEngine: the Spec's --cache-bust target becomes
// the engine's marker: the preset's marker text (scenario.Marker) at the
// target's place, none for "" and none; input_config and the scenario's
// settings read the target from the Spec.
func TestCacheBustReachesTheEngine(t *testing.T) {
	t.Parallel()
	at := map[scenario.CacheBust]prompttext.MarkerPlacement{
		scenario.CacheBustFirstTurnPrefix: prompttext.FirstUserPrefix,
		scenario.CacheBustFirstTurnSuffix: prompttext.FirstUserSuffix,
		scenario.CacheBustSystemPrefix:    prompttext.SystemPrefix,
		scenario.CacheBustSystemSuffix:    prompttext.SystemSuffix,
	}
	for _, cb := range append([]scenario.CacheBust{""}, scenario.CacheBusts...) {
		s := NewSpec()
		s.CacheBust = cb
		got := s.replayConfig("http://localhost:8000", &Loaded{}, new(replay.Progress)).CacheBust
		want, marks := at[cb]
		if !marks {
			if got.Marker != nil {
				t.Errorf("%q: the engine gets a marker, want none", cb)
			}
			continue
		}
		if got.Marker == nil || got.Placement != want {
			t.Errorf("%q: placement %v (marker set %v), want %v with the preset's marker", cb, got.Placement, got.Marker != nil, want)
			continue
		}
		if m, w := got.Marker("run", 2, 3, "trace::sa:x"), scenario.Marker("run", 2, 3, "trace::sa:x"); m != w {
			t.Errorf("%q: marker %q, want the preset's %q", cb, m, w)
		}
		if v := s.inputConfig()["cache_bust"]; v != string(cb) {
			t.Errorf("%q: input_config cache_bust %v", cb, v)
		}
		if set := s.ScenarioSettings(); set.CacheBust != scenario.Some(cb) {
			t.Errorf("%q: ScenarioSettings().CacheBust = %+v", cb, set.CacheBust)
		}
	}
	if len(at) != len(scenario.CacheBusts)-1 {
		t.Fatalf("%d placements for %d marker targets: a new --cache-bust target needs its place here and in cacheBust", len(at), len(scenario.CacheBusts)-1)
	}
}

// TestNewSpecClassifiesOverflows: NewSpec's engine settings recognise the
// context-overflow texts of the preset's classifier.
func TestNewSpecClassifiesOverflows(t *testing.T) {
	t.Parallel()
	c := NewSpec().Replay.Classifier
	body := []byte(`{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens","code":400}}`)
	if c == nil || !c.IsOverflow(body) || c.IsOverflow([]byte(`{"error":{"message":"internal error"}}`)) {
		t.Fatalf("NewSpec().Replay.Classifier = %v: want the preset's classifier (scenario.DefaultClassifier)", c)
	}
}
