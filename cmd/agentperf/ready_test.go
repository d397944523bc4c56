package main

import (
	"context"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentperf/agentperf/server/sim"
)

// TestProfileWaitsForALateServer: with --wait-for-model-timeout the run
// waits for a server that starts 10 s after the command (2 s under
// -short), logging each failed probe with the time waited, and then runs
// with no failed request; without the wait, the same late server fails
// the run at once. A server that never comes fails the wait at its
// timeout, naming the flag.
func TestProfileWaitsForALateServer(t *testing.T) {
	clearAIPerfEnv(t)
	late := 10 * time.Second
	if testing.Short() {
		late = 2 * time.Second
	}
	// A free port, closed again: the simulator listens there later.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var mu sync.Mutex
	var srv *sim.Server
	started := time.Now()
	timer := time.AfterFunc(late, func() {
		cfg := sim.DefaultConfig()
		cfg.Model, cfg.Addr, cfg.ZeroLatency = "demo", addr, true
		s, err := sim.New(cfg)
		if err == nil {
			err = s.Start()
		}
		if err != nil {
			t.Errorf("start the late simulator at %s: %v", addr, err)
			return
		}
		mu.Lock()
		srv = s
		mu.Unlock()
	})
	t.Cleanup(func() {
		timer.Stop()
		mu.Lock()
		defer mu.Unlock()
		if srv != nil {
			srv.Close()
		}
	})
	dir := t.TempDir()
	args := append([]string{"profile", "--url", "http://" + addr, "--public-dataset", "synthetic:traces=6", "--tokenizer", "builtin"}, fastRunArgs(dir)...)
	args = append(args, "--wait-for-model-timeout", "60", "--wait-for-model-interval", "0.5", "--wait-for-model-mode", "both")
	code, stdout, stderr := runProfileCLI(context.Background(), t, args...)
	if code != exitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if waited := time.Since(started); waited < late {
		t.Fatalf("the run ended %v after the start, before the server came up (%v)", waited, late)
	}
	notYet := regexp.MustCompile(`server not ready yet \(([0-9.]+)(ms|s) of 1m0s waited\): (GET|POST) http://` + regexp.QuoteMeta(addr))
	if n := len(notYet.FindAllString(stderr, -1)); n < 2 {
		t.Errorf("%d progress lines of the wait, want one per failed probe (every 0.5 s for %v):\n%s", n, late, stderr)
	}
	m := regexp.MustCompile(`server ready after ([0-9.]+)s \((\d+) probe`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("stderr does not say the server became ready:\n%s", stderr)
	}
	agg := checkArtifacts(t, dir)
	// error_request_count is left out when no request failed (-1 here).
	if ok, errs := num(agg, "request_count", "avg"), num(agg, "error_request_count", "avg"); ok < 1 || errs > 0 {
		t.Errorf("%v successful and %v failed requests after the wait, want some and none", ok, errs)
	}

	// A server that never comes: the wait ends at its timeout.
	dir2 := t.TempDir()
	args2 := append([]string{"profile", "--url", "http://127.0.0.1:1", "--public-dataset", "synthetic:traces=6", "--tokenizer", "builtin"}, fastRunArgs(dir2)...)
	args2 = append(args2, "--wait-for-model-timeout", "1.5", "--wait-for-model-interval", "0.5", "--wait-for-model-mode", "models")
	t0 := time.Now()
	code, _, stderr = runProfileCLI(context.Background(), t, args2...)
	if code == exitOK || !strings.Contains(stderr, "the server did not become ready within --wait-for-model-timeout 1.5s") {
		t.Errorf("never-ready server: exit %d, stderr:\n%s", code, stderr)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("the 1.5 s wait took %v", d)
	}
}
