package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentperf/agentperf/analysis/inferencex"
	"github.com/agentperf/agentperf/metrics/plot"
	"github.com/agentperf/agentperf/server/servermetrics"
	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/ui"
)

// TestEngineFiguresOnEverySurface: for each engine of the engines table
// the simulator speaks (its /metrics dialect: vLLM, SGLang, llama.cpp)
// and one the table does not know (TGI), a run's /metrics pages give the
// same derived figures — GPU prefix-cache hit rate, KV usage, queue —
// through every surface: the live view and its line, the summary, the
// aggregate's metadata, the plot, the InferenceX JSON and report --check.
// The hit rate is held to the simulator's own counters. llama.cpp's
// prompt counter leaves the cached tokens out; its KV usage is not
// exported, which every surface says. The unknown engine is named with
// its families, never "no data yet".
func TestEngineFiguresOnEverySurface(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dialect, backend, title, adapter string
		kv                               bool
	}{
		{"vllm", "vllm", "vLLM", "vllm", true},
		{"sglang", "sglang", "SGLang", "sglang", true},
		{"llamacpp", "llamacpp", "llama.cpp", "llamacpp", false},
		{"tgi", "unknown", "", "unknown", false},
	} {
		t.Run(c.dialect, func(t *testing.T) {
			t.Parallel()
			cfg := sim.DefaultConfig()
			cfg.MetricsDialect = c.dialect
			cfg.MaxModelLen = 4096
			cfg.KVCapacityTokens = 16384
			cfg.DecodeBaseMs = 1
			srv, err := sim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			scr := servermetrics.New(servermetrics.Config{URLs: servermetrics.URLsFrom(srv.URL+"/v1", nil, nil),
				Interval: 10 * time.Millisecond, SliceDuration: 50 * time.Millisecond})
			ctx := context.Background()
			scr.Baseline(ctx)
			scr.MarkProfilingStart(time.Now())
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { scr.Run(runCtx); close(done) }()
			prefix := strings.Repeat("func f() { return } // the agent's shared context\n", 30)
			for wave := range 3 {
				var wg sync.WaitGroup
				for i := range 6 {
					wg.Add(1)
					go func() { defer wg.Done(); simChat(t, srv.URL, prefix, wave*10+i) }()
				}
				wg.Wait()
			}
			time.Sleep(30 * time.Millisecond)
			stop()
			<-done
			scr.MarkProfilingEnd(time.Now())
			scr.Final(ctx)
			dir := copyReportFixture(t)
			d, err := scr.Export(dir)
			if err != nil {
				t.Fatal(err)
			}
			st := srv.Stats()
			want := math.NaN()
			switch c.dialect {
			case "vllm":
				want = float64(st.PrefixHits) / float64(st.PrefixQueries)
			case "sglang", "llamacpp":
				want = float64(st.PrefixHits) / float64(st.PromptTokens)
			}
			if c.backend != "unknown" && (st.PrefixHits == 0 || !(want > 0)) {
				t.Fatalf("the traffic made no prefix-cache hits: %+v", st)
			}
			pct := fmt.Sprintf("%.1f%%", 100*want)
			t.Logf("%s: sim hit rate %s (hits %d, queries %d, prompt %d)", c.dialect, pct, st.PrefixHits, st.PrefixQueries, st.PromptTokens)

			// The aggregate's server figures (run metadata).
			m := d.Map()
			if m["server_metrics_backend"] != c.backend {
				t.Errorf("aggregate: backend %v, want %s", m["server_metrics_backend"], c.backend)
			}
			if hit, ok := m["prefix_cache_hit_rate_gpu_local"].(float64); c.backend != "unknown" && (!ok || !closeTo(hit, want)) {
				t.Errorf("aggregate: hit rate %v, want %v", m["prefix_cache_hit_rate_gpu_local"], want)
			} else if c.backend == "unknown" && ok {
				t.Errorf("aggregate: an unknown engine has a hit rate %v", hit)
			}
			if _, ok := m["gpu_kv_usage_peak"]; ok != c.kv {
				t.Errorf("aggregate: KV peak present %v, want %v", ok, c.kv)
			}
			if c.dialect == "llamacpp" {
				// Every prompt token, the cached ones added back.
				if p, _ := m["server_prompt_tokens"].(float64); p != float64(st.PromptTokens) {
					t.Errorf("aggregate: server prompt tokens %v, sim %d", m["server_prompt_tokens"], st.PromptTokens)
				}
			}

			// The summary.
			var sum bytes.Buffer
			WriteDerived(&sum, d)
			out := sum.String()
			switch {
			case c.backend == "unknown":
				if !strings.Contains(out, "server engine unknown") || !strings.Contains(out, "tgi_queue_size") || strings.Contains(out, "n/a") {
					t.Errorf("summary of an unknown engine:\n%s", out)
				}
			default:
				if !strings.Contains(out, c.title+" /metrics over the profiling window") || !strings.Contains(out, "GPU prefix-cache hit rate "+pct) {
					t.Errorf("summary, want %s's hit rate %s:\n%s", c.title, pct, out)
				}
				if !c.kv && !strings.Contains(out, "n/a where llama.cpp: it exports no KV-usage gauge") {
					t.Errorf("summary: KV n/a without a reason:\n%s", out)
				}
			}

			// The live view: figures and its line.
			sf := serverFigures(scr)
			line := ui.Line(&ui.Snapshot{Sample: ui.Sample{Server: sf, Streaming: true}})
			switch {
			case c.backend == "unknown":
				if sf.Valid || !strings.Contains(line, "server engine unknown") || !strings.Contains(line, "tgi_queue_size") || strings.Contains(line, "no data yet") {
					t.Errorf("live line of an unknown engine: %s", line)
				}
			default:
				if !sf.Valid || !closeTo(sf.HitRate, want) || math.IsNaN(sf.Running) || math.IsNaN(sf.Waiting) || math.IsNaN(sf.KVUsage) == c.kv {
					t.Errorf("live figures %+v, want hit rate %v, queue, KV %v", sf, want, c.kv)
				}
				if !strings.HasPrefix(strings.SplitN(line, "| server ", 2)[1], c.title+": ") {
					t.Errorf("live line does not name %s: %s", c.title, line)
				}
			}

			// The plot: the hit-rate panel has the engine's series; an
			// unknown engine is a named warning.
			ex := scr.Snapshot()
			fig := plot.Figure(plot.Input{Server: ex})
			var hitPts int
			for _, p := range fig.Panels {
				if strings.HasPrefix(p.Title, "Prefix-cache hit rate") && len(p.Series) > 0 {
					hitPts = len(p.Series[0].Y)
				}
			}
			if (hitPts > 0) != (c.backend != "unknown") {
				t.Errorf("plot: %d hit-rate points", hitPts)
			}
			w, err := plot.Render(plot.Input{Server: ex}, filepath.Join(t.TempDir(), "p.png"))
			if err != nil {
				t.Fatal(err)
			}
			if c.backend == "unknown" && !strings.Contains(strings.Join(w, "\n"), "server engine unknown") {
				t.Errorf("plot warnings %q", w)
			}

			// report: the InferenceX JSON and --check.
			run, err := inferencex.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			env, _ := inferencex.LoadEnv(inferencex.MapLookup(map[string]string{"FRAMEWORK": c.dialect, "MODEL": "m", "TP": "1", "CONC": "4", "RUNNER_TYPE": "cpu", "PRECISION": "fp16"}))
			res, err := run.InferenceX(inferencex.Options{Env: env})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := res.WriteJSON(&buf); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Server struct {
					Adapter string `json:"adapter"`
					Cache   struct {
						GPU *float64 `json:"gpu_cache_hit_rate"`
					} `json:"cache"`
				} `json:"server_metrics"`
			}
			if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Server.Adapter != c.adapter {
				t.Errorf("InferenceX adapter %q, want %s", doc.Server.Adapter, c.adapter)
			}
			if c.backend == "unknown" {
				if doc.Server.Cache.GPU != nil || !strings.Contains(strings.Join(res.Warnings, "\n"), "tgi_queue_size") {
					t.Errorf("InferenceX of an unknown engine: hit rate %v, warnings %q", doc.Server.Cache.GPU, res.Warnings)
				}
			} else if doc.Server.Cache.GPU == nil || math.Abs(*doc.Server.Cache.GPU-want) > 1e-5 { // the JSON keeps 5 decimals
				t.Errorf("InferenceX hit rate %v, want %v", *doc.Server.Cache.GPU, want)
			}
			var engineCheck *inferencex.CheckResult
			for _, r := range run.Check(inferencex.CheckOptions{FailedRequestThreshold: 1}) {
				if r.Name == "server_engine" {
					engineCheck = &r
				}
			}
			if engineCheck == nil || engineCheck.OK != (c.backend != "unknown") || (c.title != "" && !strings.Contains(engineCheck.Message, c.title)) {
				t.Errorf("report --check server_engine: %+v", engineCheck)
			}
		})
	}
}

// closeTo compares rates computed from the same counters along different
// paths (a window's deltas, the totals).
func closeTo(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// simChat sends one streaming chat request that shares prefix with the
// others, and drains it.
func simChat(t *testing.T, base, prefix string, i int) {
	body := fmt.Sprintf(`{"model":"agentperf-sim","stream":true,"messages":[{"role":"system","content":%q},{"role":"user","content":"turn %d"}],"max_tokens":8,"ignore_eos":true}`, prefix, i)
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("sim answered %d", resp.StatusCode)
	}
}

// copyReportFixture copies report's two-engine artifact folder, whose
// server export the test replaces.
func copyReportFixture(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "analysis", "inferencex", "testdata", "two-engine")
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
