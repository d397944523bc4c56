package gputelemetry_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentperf/agentperf/server/gputelemetry"
	"github.com/agentperf/agentperf/server/sim"
)

// load sends streams of completions to srv from lanes goroutines until
// ctx is done, so that its batch (and so its GPUs' power) rises and falls.
func load(ctx context.Context, t *testing.T, url string, lanes int) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				body := fmt.Sprintf(`{"model":"agentperf-sim","messages":[{"role":"user","content":"lane %d says hello"}],"max_tokens":%d,"ignore_eos":true}`, i, 20+i*15)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return
				}
				resp.Body.Close()
			}
		}()
	}
	return &wg
}

func startSim(t *testing.T, cfg sim.Config) *sim.Server {
	t.Helper()
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// TestEnergyMatchesServedPower runs the collector against the simulator's
// GPU pages under a changing load, with the page's schema changing
// mid-run, and checks per GPU that the energy over the window matches the
// integral of the power the simulator served within 1 %, and the
// simulator's own energy within 1 %.
func TestEnergyMatchesServedPower(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for seconds")
	}
	for _, kind := range []string{"dcgm", "amd"} {
		t.Run(kind, func(t *testing.T) {
			srv := startSim(t, sim.Config{GPUMetrics: kind, GPUs: 2, Engines: 2, GPUSchemaChangeAfter: 1500 * time.Millisecond})
			var notes []string
			var mu sync.Mutex
			col := gputelemetry.New(gputelemetry.Config{URLs: []string{srv.URL + sim.GPUMetricsPath(kind)}, Interval: 100 * time.Millisecond,
				Logf: func(f string, a ...any) { mu.Lock(); notes = append(notes, fmt.Sprintf(f, a...)); mu.Unlock() }})
			if n := col.Start(context.Background()); n != 1 {
				t.Fatalf("Start kept %d endpoints, want 1", n)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { col.Run(ctx); close(done) }()
			lctx, stopLoad := context.WithCancel(context.Background())
			wg := load(lctx, t, srv.URL, 8)
			time.Sleep(400 * time.Millisecond)
			start := time.Now()
			e0 := srv.GPUs()
			col.ProfilingStarted(start, time.Time{})
			time.Sleep(1500 * time.Millisecond)
			stopLoad() // the power falls back towards idle inside the window
			wg.Wait()
			time.Sleep(1200 * time.Millisecond)
			end := time.Now()
			e1 := srv.GPUs()
			col.ProfilingEnded(end)
			time.Sleep(150 * time.Millisecond)
			cancel()
			<-done
			col.Final(context.Background())
			r := col.Result()
			if len(r.GPUs) != 2 {
				t.Fatalf("GPUs = %d, want 2 (%+v)", len(r.GPUs), r.GPUs)
			}
			for i, g := range r.GPUs {
				if g.EnergyJ == nil || g.PowerIntegralJ == nil {
					t.Fatalf("GPU %s: energy %v, power integral %v: %s", g.Index, g.EnergyJ, g.PowerIntegralJ, g.Problem)
				}
				if g.EnergySource != gputelemetry.SourceCounter {
					t.Errorf("GPU %s: energy from %s, want the counter", g.Index, g.EnergySource)
				}
				if d := math.Abs(*g.EnergyJ-*g.PowerIntegralJ) / *g.PowerIntegralJ; d > 0.01 {
					t.Errorf("GPU %s: counter %.1f J vs power integral %.1f J: %.2f%% apart, want ≤ 1%%", g.Index, *g.EnergyJ, *g.PowerIntegralJ, 100*d)
				}
				exact := e1[i].EnergyJ - e0[i].EnergyJ
				if d := math.Abs(*g.EnergyJ-exact) / exact; d > 0.01 {
					t.Errorf("GPU %s: %.1f J vs the simulator's %.1f J: %.2f%% apart", g.Index, *g.EnergyJ, exact, 100*d)
				}
				if g.Max["power_w"] < sim.GPUIdleWatts+100 {
					t.Errorf("GPU %s: max power %.0f W: the load did not raise it", g.Index, g.Max["power_w"])
				}
				// Samples after the schema change are kept: the window holds
				// about 27 scrapes, half after the change.
				if g.Samples < 20 {
					t.Errorf("GPU %s: %d power samples in the window, want ≥ 20 (collection stopped at the schema change?)", g.Index, g.Samples)
				}
				if _, ok := g.Mean["mem_clock_mhz"]; !ok {
					t.Errorf("GPU %s: the memory clock that appeared mid-run is missing", g.Index)
				}
			}
			if len(r.SchemaChanges) == 0 {
				t.Errorf("no schema change noted; notes: %q", notes)
			}
			if r.TotalEnergyJ == nil || r.P90TotalPowerW == nil || *r.P90TotalPowerW < *r.AvgTotalPowerW {
				t.Errorf("total %v, p90 %v, avg %v", r.TotalEnergyJ, r.P90TotalPowerW, r.AvgTotalPowerW)
			}
			b, err := r.Encode()
			if err != nil {
				t.Fatal(err)
			}
			back, err := gputelemetry.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			b2, _ := back.Encode()
			if !bytes.Equal(b, b2) {
				t.Error("the export does not decode to what was encoded")
			}
		})
	}
}

// TestLateGPUAndFailures: a GPU whose series appears after the window
// started has no energy (and says why), the others keep theirs; a page
// that is not Prometheus text is a failed scrape, not the end of
// collection.
func TestLateGPUAndFailures(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := n.Add(1)
		if k == 3 {
			fmt.Fprint(w, "not { prometheus")
			return
		}
		fmt.Fprintf(w, "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 100\n")
		if k >= 5 {
			fmt.Fprintf(w, "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\"} 200\n")
		}
	}))
	defer ts.Close()
	now := time.Unix(1000, 0)
	var clockMu sync.Mutex
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); now = now.Add(time.Second); return now }
	col := gputelemetry.New(gputelemetry.Config{URLs: []string{ts.URL + "/metrics"}, Clock: clock})
	col.Start(context.Background()) // t=1001 (start), scrape at 1002
	col.ProfilingStarted(time.Unix(1003, 0), time.Time{})
	for range 6 {
		col.Scrape(context.Background())
	}
	col.ProfilingEnded(time.Unix(1009, 0))
	col.Final(context.Background())
	r := col.Result()
	if len(r.GPUs) != 2 {
		t.Fatalf("GPUs = %+v", r.GPUs)
	}
	if g := r.GPUs[0]; g.EnergyJ == nil || math.Abs(*g.EnergyJ-600) > 1e-6 || g.EnergySource != gputelemetry.SourceIntegral {
		t.Errorf("GPU 0: %+v, want 600 J integrated from power", g)
	}
	if g := r.GPUs[1]; g.EnergyJ != nil || g.Problem == "" {
		t.Errorf("GPU 1 appeared late: %+v, want no energy and a problem", g)
	}
	if r.TotalEnergyJ != nil {
		t.Errorf("total %v with a GPU missing, want none", *r.TotalEnergyJ)
	}
	if r.Endpoints[0].Failures != 1 {
		t.Errorf("failures = %d, want 1", r.Endpoints[0].Failures)
	}
}

func TestDefaultEndpointDroppedWhenSilent(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	var logged []string
	col := gputelemetry.New(gputelemetry.Config{Probe: []string{ts.URL + "/metrics"}, Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
	if n := col.Start(context.Background()); n != 0 {
		t.Fatalf("kept %d endpoints, want 0", n)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "--gpu-telemetry") {
		t.Errorf("logged %q, want one note naming --gpu-telemetry", logged)
	}
}
