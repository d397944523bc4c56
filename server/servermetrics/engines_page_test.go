package servermetrics

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// pageValues reads the unlabelled samples of a Prometheus text page.
func pageValues(t *testing.T, page []byte) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(page)))
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' || strings.Contains(l, "{") {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		out[f[0]] = v
	}
	return out
}

// TestRecordedLlamaCppPages: two /metrics pages recorded from a real
// llama-server (llama-cpp-python 0.3.36's vendored llama.cpp, --metrics;
// bench/real-engine), before and after a few chat requests that share a
// prefix, scraped as a run would: the engine is llama.cpp with its 15
// families, the hit rate is Δprompt_tokens_cached / (Δprompt_tokens +
// Δprompt_tokens_cached) (its prompt counter leaves the cached tokens
// out), the prompt tokens are both together, the queue is known and the KV
// usage is not (llama.cpp exports none).
func TestRecordedLlamaCppPages(t *testing.T) {
	t.Parallel()
	var pages [2][]byte
	for i, n := range []string{"llamacpp-metrics-before.txt", "llamacpp-metrics-after.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "engines", n))
		if err != nil {
			t.Fatal(err)
		}
		pages[i] = b
	}
	var which atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(pages[which.Load()])
	}))
	t.Cleanup(srv.Close)
	s := New(Config{URLs: []string{srv.URL + "/metrics"}, Interval: time.Hour, SliceDuration: 50 * time.Millisecond})
	ctx := context.Background()
	s.Baseline(ctx)
	s.MarkProfilingStart(time.Now())
	time.Sleep(5 * time.Millisecond)
	which.Store(1)
	s.Scrape(ctx)
	s.MarkProfilingEnd(time.Now())
	s.Final(ctx)
	d, err := s.Export(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, a := pageValues(t, pages[0]), pageValues(t, pages[1])
	dp := a["llamacpp:prompt_tokens_total"] - b["llamacpp:prompt_tokens_total"]
	dc := a["llamacpp:prompt_tokens_cached_total"] - b["llamacpp:prompt_tokens_cached_total"]
	if !(dc > 0) {
		t.Fatalf("the recorded pages show no cached prompt tokens (Δprompt %v, Δcached %v)", dp, dc)
	}
	if d.Backend != "llamacpp" || len(d.Families) != 15 {
		t.Errorf("backend %q with %d families %v, want llamacpp with 15", d.Backend, len(d.Families), d.Families)
	}
	if want := dc / (dp + dc); !d.GPUPrefixHitRateValid || d.GPUPrefixHitRate != want {
		t.Errorf("hit rate %v (valid %v), want %v", d.GPUPrefixHitRate, d.GPUPrefixHitRateValid, want)
	}
	if !d.PromptTokensValid || d.PromptTokens != dp+dc {
		t.Errorf("prompt tokens %v, want computed %v + cached %v", d.PromptTokens, dp, dc)
	}
	if d.KVUsagePeakValid || d.KVUsageMeanActiveValid {
		t.Errorf("KV usage from a server that exports none: %+v", d)
	}
	lf := s.Live()
	if !lf.QueueValid || lf.KVUsageValid || !lf.GPUPrefixHitRateValid || lf.GPUPrefixHitRate != dc/(dp+dc) {
		t.Errorf("live figures %+v", lf)
	}
	if det := s.Engine(); det.Engine == nil || det.Engine.Title != "llama.cpp" {
		t.Errorf("Scraper.Engine() = %+v", det)
	}
}
