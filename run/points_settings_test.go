package run

import (
	"strings"
	"testing"
)

// TestPointSettings: a point's settings keep what changes a measurement,
// never a credential in clear, and nothing that only says where or how
// the point is shown.
func TestPointSettings(t *testing.T) {
	var p Points
	got := p.Settings(map[string]string{
		"url": "http://user:secret@host:8000", "api-key": "sk-123", "header": "[X-Auth: t]", "concurrency": "8",
		"output-artifact-dir": "out", "random-seed": "42", "server-metrics-header": "[]",
	}, []string{"AIPERF_HTTP_TCP_USER_TIMEOUT=900000", "AIPERF_API_KEY=x", "AGENTPERF_DATASET_CACHE_DIR=/c", "HOME=/root"})
	want := map[string]string{"--random-seed": "42", "--server-metrics-header": "[]", "$AIPERF_HTTP_TCP_USER_TIMEOUT": "900000"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, k := range []string{"--concurrency", "--output-artifact-dir", "$AIPERF_API_KEY", "$AGENTPERF_DATASET_CACHE_DIR", "$HOME"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s kept: %q", k, got[k])
		}
	}
	for _, k := range []string{"--api-key", "--header"} {
		if !strings.HasPrefix(got[k], "sha256:") {
			t.Errorf("%s = %q, want a digest", k, got[k])
		}
	}
	if strings.Contains(got["--url"], "secret") || !strings.Contains(got["--url"], "host:8000") {
		t.Errorf("--url = %q, want the URL without its password", got["--url"])
	}
}
