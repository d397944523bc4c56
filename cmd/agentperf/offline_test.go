package main

import (
	"strings"
	"testing"
	"time"
)

// TestDownloadsOfflineSayTheFix: with the hub unreachable (a closed
// loopback port), dataset download and tokenizer download say what failed
// and how to fix it, and do not advise running the command that just
// failed.
func TestDownloadsOfflineSayTheFix(t *testing.T) {
	hubBackoff = time.Millisecond
	t.Cleanup(func() { hubBackoff = 0 })
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_TOKEN", "")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"dataset", "download", "semianalysis_cc_traces_weka"}, []string{"dataset download semianalysis_cc_traces_weka: cannot download", "connection refused", "HTTPS_PROXY", "HF_HUB_OFFLINE=1", "--input-file"}},
		{[]string{"tokenizer", "download", "Qwen/Qwen3-32B"}, []string{"tokenizer download Qwen/Qwen3-32B: cannot download", "connection refused", "HTTPS_PROXY", "HF_HUB_OFFLINE=1", "--tokenizer PATH"}},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			code, _, errOut := runCLI(t, c.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("the error lacks %q:\n%s", w, errOut)
				}
			}
			if strings.Contains(errOut, "agentperf "+strings.Join(c.args[:2], " ")+" ") && strings.Contains(errOut, "pre-download") {
				t.Errorf("the advice is to run the command that just failed:\n%s", errOut)
			}
		})
	}
}
