package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestShardJoinTimeoutFlag (issue 34, case 8): --shard-join-timeout bounds
// how long a shard waits for shard 0 (it was a fixed 10 minutes); a
// timeout that is not a positive number of seconds is a usage error.
func TestShardJoinTimeoutFlag(t *testing.T) {
	clearAIPerfEnv(t)
	rdv := loopbackAddr(t) // nothing listens there
	srv := startTestSim(t)
	start := time.Now()
	args := append(shardArgs(srv.URL, rdv, t.TempDir(), 1, "1"), "--shard-join-timeout", "1")
	code, out, errOut := runProfileCLI(context.Background(), t, args...)
	if code != exitRunFailed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitRunFailed, out, errOut)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the shard gave up after %s with a 1 s join timeout", d)
	}
	if !strings.Contains(errOut, "shard 0 at "+rdv+" did not answer within 1s") {
		t.Errorf("stderr:\n%s", errOut)
	}
	for _, bad := range [][]string{{"--shard-join-timeout", "0"}, {"--shard-join-timeout", "-5"}} {
		args := append(shardArgs(srv.URL, rdv, t.TempDir(), 1, "1"), bad...)
		if code, _, errOut := runProfileCLI(context.Background(), t, args...); code != exitUsage || !strings.Contains(errOut, "--shard-join-timeout") {
			t.Errorf("%v: exit %d, want %d naming the flag\n%s", bad, code, exitUsage, errOut)
		}
	}
}
