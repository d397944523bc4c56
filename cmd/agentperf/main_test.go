package main

import (
	"os"
	"testing"
	"time"
)

// envAsMain makes the test binary run agentperf's main instead of the
// tests, so tests can start the real command in a terminal (tmux) without
// building it first.
const envAsMain = "AGENTPERF_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envAsMain) == "1" {
		main()
		return
	}
	// No test reaches the real Hugging Face hub: tests that download set
	// HF_ENDPOINT to a fake hub and HF_HUB_OFFLINE=0 themselves.
	if _, set := os.LookupEnv("HF_HUB_OFFLINE"); !set {
		os.Setenv("HF_HUB_OFFLINE", "1")
	}
	// The artifacts hold naive local times, so the golden files
	// (TestGoldenFolder) are written in UTC. time.Local is set here, before
	// any test starts a goroutine: setting it inside a test races with the
	// goroutines earlier tests leave behind (a simulator's connections
	// reading the zone), which -race reports.
	time.Local = time.UTC
	os.Exit(m.Run())
}
