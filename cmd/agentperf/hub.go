package main

import (
	"fmt"
	"time"

	"github.com/agentperf/agentperf/internal/hfhub"
	"github.com/agentperf/agentperf/internal/termio"
)

// hubBackoff, when positive, replaces the hub client's first delay
// between retries (tests of an unreachable hub set it short).
var hubBackoff time.Duration

// newHub builds the Hugging Face hub client from the environment
// (HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE, HF_HUB_CACHE, proxies …), with
// a progress bar on io.err when it is a terminal and log lines otherwise.
// logf receives the client's notes ("hub: …"); nil prints them to io.err.
func newHub(getenv func(string) string, io stdio, logf func(string, ...any)) (*hfhub.Client, error) {
	cfg, err := hfhub.ConfigFromEnv(getenv)
	if err != nil {
		return nil, usagef("Hugging Face hub settings: %v", err)
	}
	// A bar on a terminal, log lines otherwise (and with
	// HF_HUB_DISABLE_PROGRESS_BARS).
	cfg.Progress = hfhub.NewProgressWriter(io.err, termio.IsTerminal(io.err) && !cfg.NoProgressBars)
	cfg.Logf = logf
	if hubBackoff > 0 {
		cfg.Backoff = hubBackoff
	}
	if logf == nil {
		cfg.Logf = func(format string, args ...any) { fmt.Fprintf(io.err, format+"\n", args...) }
	}
	return hfhub.New(cfg), nil
}
