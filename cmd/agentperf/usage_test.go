package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/server/sim"
)

// TestProfileMissingUsageIsLoud (issue 34, case 2): with
// --use-server-token-count, a server that omits usage used to give a
// clean-looking run: every request "successful" without ISL/OSL, exit 0,
// no warning. As in the pinned aiperf the requests stay successful
// without token metrics, but the run says so: a log line at the first,
// and a warning in metadata.warnings and on stderr with the count
// (metadata.agentperf.missing_usage).
func TestProfileMissingUsageIsLoud(t *testing.T) {
	if testing.Short() {
		t.Skip("a run of a few seconds")
	}
	cfg := sim.DefaultConfig()
	cfg.ZeroLatency = true
	cfg.Faults.MissingUsage = sim.FaultRule{Every: 1}
	s := startSimWith(t, cfg)
	out := filepath.Join(t.TempDir(), "artifacts")
	code, stdout, stderr := runCmd(t, "profile", "--url", s.URL, "--public-dataset", "synthetic:traces=8",
		"--model", "demo", "--tokenizer", "builtin", "--concurrency", "2", "--benchmark-duration", "2",
		"--streaming", "--use-server-token-count", "--trace-idle-gap-cap-seconds", "0.01",
		"--output-artifact-dir", out, "--ui-type", "none", "--no-plot")
	_ = code // the verdict is the pin's: the requests are successful
	agg := readAggregate(t, out)
	md := agg["metadata"].(map[string]any)
	ap := md["agentperf"].(map[string]any)
	acct := md["request_accounting"].(map[string]any)
	ok := num(acct, "profiling_ok")
	if ok < 1 {
		t.Fatalf("no successful profiling request: %v\n%s", acct, stderr)
	}
	if got := num(ap, "missing_usage"); got != ok {
		t.Errorf("metadata.agentperf.missing_usage = %v, want every successful profiling request (%v)", got, ok)
	}
	const want = "the server sent no usage for"
	if !strings.Contains(strings.Join(toStrings(md["warnings"]), "\n"), want) {
		t.Errorf("metadata.warnings do not say %q: %v", want, md["warnings"])
	}
	if !strings.Contains(stdout+stderr, want) {
		t.Errorf("the terminal output does not say %q:\n%s\n%s", want, stdout, stderr)
	}
}
