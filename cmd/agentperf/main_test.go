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
	os.Exit(m.Run())
}
