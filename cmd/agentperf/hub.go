package main

import (
	"time"

	"github.com/agentperf/agentperf/internal/hfhub"
	"github.com/agentperf/agentperf/internal/termio"
)

// hubBackoff, when positive, replaces the hub client's first delay
// between retries (tests of an unreachable hub set it short).
var hubBackoff time.Duration

// newHub builds the Hugging Face hub client from the environment
// (HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE, HF_HUB_CACHE, proxies …), with
// a progress bar on io.err when it is a terminal and log lines otherwise
// (hfhub.ConsoleConfig). logf receives the client's notes ("hub: …"); nil
// prints them to io.err.
func newHub(getenv func(string) string, io stdio, logf func(string, ...any)) (*hfhub.Client, error) {
	cfg, err := hfhub.ConsoleConfig(getenv, io.err, termio.IsTerminal(io.err))
	if err != nil {
		return nil, asUsage(err)
	}
	if logf != nil {
		cfg.Logf = logf
	}
	if hubBackoff > 0 {
		cfg.Backoff = hubBackoff
	}
	return hfhub.New(cfg), nil
}
