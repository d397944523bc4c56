package plot

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentperf/agentperf/server/servermetrics"
	"github.com/agentperf/agentperf/server/sim"
)

// TestRenderFromSimRun is the end-to-end check of issue 6: real traffic
// against the simulator (two engines, offload tier), real scrapes, the
// export written and read back, then the figure. Panels fed by metrics the
// simulator exports must show data; the figure is a valid 2100×3600 PNG.
func TestRenderFromSimRun(t *testing.T) {
	t.Parallel()
	cfg := sim.DefaultConfig()
	cfg.Engines = 2
	cfg.MaxModelLen = 4096
	cfg.KVCapacityTokens = 6144
	cfg.OffloadCapacityTokens = 65536
	cfg.DecodeBaseMs = 1
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })

	sc := servermetrics.New(servermetrics.Config{URLs: servermetrics.URLsFrom(srv.URL, nil, nil), Interval: 10 * time.Millisecond,
		SliceDuration: 50 * time.Millisecond, Logf: t.Logf})
	ctx := t.Context()
	sc.Baseline(ctx)
	sc.MarkProfilingStart(time.Now())
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { sc.Run(runCtx); close(done) }()

	var mu sync.Mutex
	var reqs []RequestPoint
	for wave := range 4 {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Distinct long prefixes per lane overflow the small GPU
				// cache, so blocks move to and from the offload tier.
				prefix := strings.Repeat(fmt.Sprintf("lane %d context line with code and logs\n", i), 60)
				rp := stream(t, srv.URL, prefix, wave, 24)
				mu.Lock()
				reqs = append(reqs, rp)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	stop()
	<-done
	sc.MarkProfilingEnd(time.Now())
	sc.Final(ctx)
	dir := t.TempDir()
	if _, err := sc.Export(dir); err != nil {
		t.Fatal(err)
	}
	ex, err := servermetrics.ReadExport(filepath.Join(dir, servermetrics.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	warn, err := Render(Input{Requests: reqs, Server: ex}, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(warn) != 0 {
		t.Errorf("warnings %q", warn)
	}
	if keep := os.Getenv("AGENTPERF_KEEP_PLOT"); keep != "" {
		b, _ := os.ReadFile(path)
		os.WriteFile(keep, b, 0o644)
	}
	px := coloured(t, path)
	// KV, queue, hit rate, throughput, prefill source, TTFT, latency,
	// decode speed always have data; offload and preemption panels depend
	// on what the run provoked.
	for _, rc := range [][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 1}, {4, 0}, {4, 1}, {5, 0}} {
		if px[rc[0]][rc[1]] < 50 {
			t.Errorf("panel (%d,%d) has no data drawn (%d coloured pixels)", rc[0], rc[1], px[rc[0]][rc[1]])
		}
	}
}

// stream sends one streaming chat request and times it like the engine:
// TTFT at the first content event, ITL over the rest.
func stream(t *testing.T, base, prefix string, turn, maxTokens int) RequestPoint {
	body := fmt.Sprintf(`{"model":"agentperf-sim","stream":true,"messages":[{"role":"system","content":%q},{"role":"user","content":"turn %d"}],"max_tokens":%d,"ignore_eos":true}`,
		prefix, turn, maxTokens)
	start := time.Now()
	nan := math.NaN()
	rp := RequestPoint{StartNs: start.UnixNano(), Phase: "profiling", TTFTms: nan, LatencyMs: nan, ITLms: nan}
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return rp
	}
	defer resp.Body.Close()
	var first, last time.Time
	chunks := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Bytes(); bytes.HasPrefix(l, []byte("data: {")) && bytes.Contains(l, []byte(`"content":"`)) {
			now := time.Now()
			if first.IsZero() {
				first = now
			}
			last = now
			chunks++
		}
	}
	end := time.Now()
	rp.EndNs = end.UnixNano()
	rp.OK = resp.StatusCode == 200 && chunks > 0
	if rp.OK {
		rp.TTFTms = float64(first.Sub(start)) / 1e6
		rp.LatencyMs = float64(last.Sub(start)) / 1e6
		if chunks > 1 {
			rp.ITLms = float64(last.Sub(first)) / 1e6 / float64(chunks-1)
		}
	}
	return rp
}
