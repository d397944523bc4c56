package run

import (
	"fmt"
	"slices"

	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// startSimulator is the one place a Spec gets its in-process simulator
// (Run, RunRepeated and StartPoints call it): when s.Replay.URL is
// sim://, it starts the simulator the URL asks for (StartSimulator, with
// the run's first model and l's tokenizer) and adds the simulator's GPU
// page, when it serves one, to s's GPU telemetry (unless the telemetry is
// off: the simulator's page is the run's exporter). For any other URL it
// returns a nil server and does nothing.
//
// With shared (a sweep's points, a repeated run's runs), s.Replay.URL
// becomes the simulator's address, so every run of s talks to this one
// simulator instead of starting its own. Without it (a single run), s
// keeps its sim:// URL, which the run's checks read (no readiness wait,
// no prefix-cache reset, the simulator's hint on an overflow); the run
// sends to the returned server's URL. The caller closes the server.
func (s *Spec) startSimulator(l *Loaded, shared bool) (*sim.Server, sim.Config, error) {
	srv, cfg, err := StartSimulator(s.Replay.URL, s.Replay.Models[0], l.Synth.Tokenizer())
	if err != nil || srv == nil {
		return nil, cfg, err
	}
	if shared {
		s.Replay.URL = srv.URL
	}
	if cfg.GPUMetrics != "" && !s.GPUTelemetry.Off && !s.NoGPUTelemetry {
		s.GPUTelemetry.URLs = append(slices.Clone(s.GPUTelemetry.URLs), srv.URL+sim.GPUMetricsPath(cfg.GPUMetrics))
	}
	return srv, cfg, nil
}

// StartSimulator starts the in-process simulator a sim:// url asks for
// (its model defaulting to model, its tokenizer to tok, so its
// prompt_tokens match the trace's counts) and returns it with its
// configuration; it returns a nil server when url is not sim://. A url
// the simulator refuses is an *InputError. The caller closes the server.
// A run goes through Spec.startSimulator, which also makes the simulator
// the run's server.
func StartSimulator(url, model string, tok tokenizer.Tokenizer) (*sim.Server, sim.Config, error) {
	if !isSim(url) {
		return nil, sim.Config{}, nil
	}
	cfg, err := simConfig(url, model, tok)
	if err != nil {
		return nil, cfg, inputErr(fmt.Errorf("--url %s: %w", url, err))
	}
	srv, err := sim.New(cfg)
	if err != nil {
		return nil, cfg, inputErr(fmt.Errorf("--url %s: %w", url, err))
	}
	if err := srv.Start(); err != nil {
		return nil, cfg, fmt.Errorf("start the in-process simulator: %w", err)
	}
	return srv, cfg, nil
}

// simConfig is the in-process simulator's configuration from a sim://
// URL; its model defaults to the run's first model, its tokenizer to the
// run's (so its prompt_tokens match the trace's counts).
func simConfig(url, model string, tok tokenizer.Tokenizer) (sim.Config, error) {
	cfg, err := sim.ParseURL(url, sim.DefaultConfig())
	if err != nil {
		return cfg, err
	}
	if cfg.Model == "" {
		cfg.Model = model
	}
	if cfg.Tokenizer == nil && cfg.TokenizerName == "" {
		cfg.Tokenizer = tok
	}
	return cfg, nil
}
