package sim

import (
	"net/http"
	"testing"
)

// TestResetPrefixCache: after a reset through either endpoint, a prompt
// that hit the cache before is computed again, and the reset is counted
// on /metrics and in Stats.
func TestResetPrefixCache(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, path string
		cfg        Config
	}{
		{"vllm", "/reset_prefix_cache", Config{ZeroLatency: true}},
		{"sglang", "/flush_cache", Config{ZeroLatency: true}},
		{"vllm-timed", "/reset_prefix_cache", fastTimed()},
		{"offload", "/reset_prefix_cache", Config{ZeroLatency: true, OffloadCapacityTokens: 100000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startSim(t, tc.cfg)
			req := chatReq{Model: "agentperf-sim", Messages: []msg{{"user", words("reset-probe", 400)}}, MaxTokens: 2}
			hits := func() int64 {
				before := s.Stats().PrefixHits
				mustDo(t, s, "/v1/chat/completions", req, nil)
				return s.Stats().PrefixHits - before
			}
			hits() // fills the cache
			if h := hits(); h == 0 {
				t.Fatalf("the repeated prompt did not hit the cache (setup)")
			}
			resp, err := http.Post(s.URL+tc.path, "application/json", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST %s: status %d", tc.path, resp.StatusCode)
			}
			if h := hits(); h != 0 {
				t.Errorf("after POST %s the prompt still hit %d cached tokens", tc.path, h)
			}
			if got := s.Stats().CacheResets; got != 1 {
				t.Errorf("Stats().CacheResets = %d, want 1", got)
			}
			if got := perEngine(t, scrape(t, s), "agentperf_sim:prefix_cache_resets_total")["0"]; got != 1 {
				t.Errorf("agentperf_sim:prefix_cache_resets_total = %v, want 1", got)
			}
		})
	}
}
