package run

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
)

// TestChainEnvironment: the AIPERF_DATASET_WEKA_* layout switches reach
// the replay config when one is set, keep the loader's defaults for the
// others, and a bad value is an input error naming the variable.
func TestChainEnvironment(t *testing.T) {
	env := func(kv map[string]string) ([]string, func(string) string) {
		var environ []string
		for k, v := range kv {
			environ = append(environ, k+"="+v)
		}
		return environ, func(k string) string { return kv[k] }
	}
	environ, get := env(map[string]string{"AIPERF_DATASET_WEKA_SPLIT_FLATTENED_AGENTS": "false", "AIPERF_DATASET_WEKA_WORKER_GROUP_MIN": "0"})
	e, err := ReadEnvironment(environ, get)
	if err != nil {
		t.Fatal(err)
	}
	var s Spec
	e.Apply(&s)
	want := dataset.DefaultChainOptions()
	want.Split, want.WorkerGroupMin = false, 0
	if s.Replay.Chains != want {
		t.Fatalf("replay chains %+v, want %+v", s.Replay.Chains, want)
	}

	environ, get = env(nil)
	e, err = ReadEnvironment(environ, get)
	if err != nil {
		t.Fatal(err)
	}
	s = NewSpec()
	s.Replay.Chains.AuxMaxRequests = 7
	e.Apply(&s)
	if want := dataset.DefaultChainOptions(); s.Replay.Chains.AuxMaxRequests != 7 || s.Replay.Chains.Split != want.Split {
		t.Errorf("no variable set, yet replay chains %+v (want the Spec's own)", s.Replay.Chains)
	}

	for _, bad := range []map[string]string{
		{"AIPERF_DATASET_WEKA_SEAM_MIN_OVERLAP_RATIO": "1.5"},
		{"AIPERF_DATASET_WEKA_AUX_MAX_REQUESTS": "-1"},
		{"AIPERF_DATASET_WEKA_AUX_CROSS_MODEL": "maybe"},
	} {
		environ, get = env(bad)
		_, err := ReadEnvironment(environ, get)
		var ie *InputError
		for k := range bad {
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), k) {
				t.Errorf("%v: error %v, want an input error naming %s", bad, err, k)
			}
		}
	}
}

// TestTCPUserTimeoutEnvironment: AIPERF_HTTP_TCP_USER_TIMEOUT (milliseconds)
// reaches replay.Config.TCPUserTimeout; unset keeps the Spec's value (the
// default, or a preset's); a malformed or out-of-range value is an input
// error naming the variable.
func TestTCPUserTimeoutEnvironment(t *testing.T) {
	read := func(v string, set bool) (Spec, error) {
		var environ []string
		kv := map[string]string{}
		if set {
			environ, kv[EnvTCPUserTimeout] = []string{EnvTCPUserTimeout + "=" + v}, v
		}
		e, err := ReadEnvironment(environ, func(k string) string { return kv[k] })
		s := NewSpec()
		if err == nil {
			e.Apply(&s)
		}
		return s, err
	}
	if s, err := read("", false); err != nil || s.Replay.TCPUserTimeout != replay.DefaultTCPUserTimeout {
		t.Errorf("unset: TCPUserTimeout %v (err %v), want the default %v", s.Replay.TCPUserTimeout, err, replay.DefaultTCPUserTimeout)
	}
	for v, want := range map[string]time.Duration{"900000": 900 * time.Second, " 450000 ": 450 * time.Second, "1": time.Millisecond, "1000000": 1000 * time.Second} {
		if s, err := read(v, true); err != nil || s.Replay.TCPUserTimeout != want {
			t.Errorf("%q: TCPUserTimeout %v (err %v), want %v", v, s.Replay.TCPUserTimeout, err, want)
		}
	}
	for _, v := range []string{"0", "-5", "1000001", "900s", "9e5", "15m", "abc"} {
		_, err := read(v, true)
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), EnvTCPUserTimeout) {
			t.Errorf("%q: error %v, want an InputError naming %s", v, err, EnvTCPUserTimeout)
		}
	}
}

// TestScenarioEnvironment: under agentx the preset's environment defaults
// apply where a variable is unset (each noted for the log), an explicit
// variable wins, and AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES is noted
// as ignored and has no effect; without a preset nothing changes.
func TestScenarioEnvironment(t *testing.T) {
	kv := map[string]string{"AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES": "1", "AIPERF_SERVICE_PROFILE_CONFIGURE_TIMEOUT": "600"}
	environ := []string{"AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES=1", "AIPERF_SERVICE_PROFILE_CONFIGURE_TIMEOUT=600"}
	get := func(k string) string { return kv[k] }
	p, err := scenario.Lookup(scenario.NameAgentX)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ReadScenarioEnvironment(p, environ, get)
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(e.Notes, "\n")
	if e.LiveAssistantSet || e.LiveAssistant || !strings.Contains(notes, "AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES is ignored under scenario agentx") {
		t.Errorf("live assistant replies under agentx: set %v, on %v; notes:\n%s", e.LiveAssistantSet, e.LiveAssistant, notes)
	}
	// The client's TCP_USER_TIMEOUT takes the preset's 900,000 ms.
	if !e.TCPUserTimeoutSet || e.TCPUserTimeout != 900*time.Second {
		t.Errorf("TCP user timeout %v (set %v), want the preset's 900s", e.TCPUserTimeout, e.TCPUserTimeoutSet)
	}
	// The explicit 600 s wins over the preset's 1800 s (the shorter of the
	// two open timeouts bounds the open).
	if e.OpenTimeout != 600*time.Second {
		t.Errorf("open timeout %v, want the explicit 600s", e.OpenTimeout)
	}
	for _, w := range []string{"AIPERF_HTTP_TCP_USER_TIMEOUT=900000 (environment default of scenario agentx)", "AIPERF_DATASET_CONFIGURATION_TIMEOUT=1800 (environment default"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes do not say %q:\n%s", w, notes)
		}
	}
	if strings.Contains(notes, "AIPERF_SERVICE_PROFILE_CONFIGURE_TIMEOUT=1800") {
		t.Errorf("a default replaced an explicit variable:\n%s", notes)
	}
	// The MVP has no environment defaults and honours the variable.
	mvp, _ := scenario.Lookup(scenario.NameAgentXMVP)
	if e, err := ReadScenarioEnvironment(mvp, environ, get); err != nil || !e.LiveAssistantSet || !e.LiveAssistant || strings.Contains(strings.Join(e.Notes, "\n"), "environment default") {
		t.Errorf("MVP: %+v, %v", e, err)
	}
}

// TestLiveAssistantFromEnv: `dataset show` and a run read the variable
// alike: any value but the false ones turns live replies on.
func TestLiveAssistantFromEnv(t *testing.T) {
	for v, want := range map[string][2]bool{"": {false, false}, "1": {true, true}, "yes": {true, true}, "ON": {true, true},
		"0": {false, true}, "false": {false, true}, " off ": {false, true}} {
		live, set := LiveAssistantFromEnv(func(string) string { return v })
		if live != want[0] || set != want[1] {
			t.Errorf("%q: live %v set %v, want %v", v, live, set, want)
		}
		e, err := ReadEnvironment(nil, func(k string) string {
			if k == "AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES" {
				return v
			}
			return ""
		})
		if err != nil || e.LiveAssistant != live || e.LiveAssistantSet != set {
			t.Errorf("%q: a run reads live %v set %v (%v), dataset show %v %v", v, e.LiveAssistant, e.LiveAssistantSet, err, live, set)
		}
	}
}
