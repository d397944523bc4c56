package main

import (
	"errors"
	"os"
	"syscall"
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

// TestPipeWriterTurnsOff: a write to a pipe whose reader died (tee killed
// with the job) fails once, and the output is off from then on: later
// writes report success and write nothing, so that no caller stops the
// run for them.
func TestPipeWriterTurnsOff(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	pw := outputWriter(w)
	if _, err := pw.Write([]byte("before\n")); err != nil {
		t.Fatalf("a write to a live pipe failed: %v", err)
	}
	r.Close() // the reader dies
	if _, err := pw.Write([]byte("after\n")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("the first write to a dead pipe: %v, want EPIPE", err)
	}
	for range 3 {
		if n, err := pw.Write([]byte("later\n")); err != nil || n != 6 {
			t.Fatalf("a later write: %d, %v; want it dropped as written", n, err)
		}
	}
}
