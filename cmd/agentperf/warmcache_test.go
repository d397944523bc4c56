package main

import (
	"context"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/server/sim"
)

// TestProfileFlagsAWarmPrefixCache: the same run twice against one server.
// The second finds the first one's prompts in the server's prefix cache
// (it hits 100 % where an infinite cache starting empty could hit about
// 62 %), and says so on stderr and in metadata.warnings; with
// --reset-prefix-cache the server is drained and its cache reset before
// the first request, and there is nothing to flag.
func TestProfileFlagsAWarmPrefixCache(t *testing.T) {
	clearAIPerfEnv(t)
	cfg := sim.DefaultConfig()
	cfg.PrefillTokensPerSec, cfg.DecodeBaseMs = 1e6, 1
	s := startSimWith(t, cfg)
	profileRun := func(extra ...string) (string, map[string]any) {
		t.Helper()
		dir := t.TempDir()
		args := append([]string{"profile", "--url", s.URL, "--tokenizer", "builtin", "--public-dataset", "synthetic:traces=12,min-turns=2,max-turns=4",
			"--random-seed", "5", "--use-server-token-count"}, fastRunArgs(dir)...)
		args = append(append(args, "--benchmark-duration", "2"), extra...)
		code, stdout, stderr := runProfileCLI(context.Background(), t, args...)
		if code != exitOK {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		return stderr, checkArtifacts(t, dir)
	}
	warned := func(agg map[string]any) bool {
		for _, w := range toStrings(agg["metadata"].(map[string]any)["warnings"]) {
			if strings.HasPrefix(w, "the server's prefix cache was warm before the run") {
				return true
			}
		}
		return false
	}
	if stderr, agg := profileRun(); warned(agg) {
		t.Fatalf("the first run against a fresh server was flagged:\n%s", stderr)
	}
	stderr, agg := profileRun()
	if !warned(agg) || !strings.Contains(stderr, "warning: the server's prefix cache was warm before the run") || !strings.Contains(stderr, "--reset-prefix-cache") {
		t.Errorf("the second run was not flagged (metadata.warnings %v):\n%s", agg["metadata"].(map[string]any)["warnings"], stderr)
	}
	stderr, agg = profileRun("--reset-prefix-cache")
	if warned(agg) || !strings.Contains(stderr, "server idle, prefix cache reset (POST /reset_prefix_cache)") {
		t.Errorf("with --reset-prefix-cache: flagged %v\n%s", warned(agg), stderr)
	}
}
