package main

import (
	"os"
	"testing"
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
	os.Exit(m.Run())
}
