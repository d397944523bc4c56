package run_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// TestStartSimulator: the one simulator start of profile, repeat and the
// capacity runner: nothing for a server URL, an input error naming
// --url for a sim:// URL the simulator refuses, else a served simulator
// whose model defaults to the run's.
func TestStartSimulator(t *testing.T) {
	t.Parallel()
	tok := tokenizer.Builtin()
	srv, _, err := run.StartSimulator("http://127.0.0.1:1", "m", tok)
	if srv != nil || err != nil {
		t.Fatalf("a server URL: got %v, %v, want no simulator", srv, err)
	}
	_, _, err = run.StartSimulator("sim://?no-such-option=1", "m", tok)
	var ie *run.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "--url sim://?no-such-option=1") {
		t.Fatalf("a refused sim:// URL: err = %v, want an *InputError naming --url", err)
	}
	srv, cfg, err := run.StartSimulator("sim://?zero-latency=true", "demo", tok)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if cfg.Model != "demo" || cfg.Tokenizer == nil {
		t.Errorf("model %q, tokenizer %v: want the run's model and tokenizer", cfg.Model, cfg.Tokenizer)
	}
	resp, err := http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatalf("the simulator does not serve: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/models: %s", resp.Status)
	}
}
