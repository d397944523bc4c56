package profile

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/dataset"
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
