package capacity_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentperf/agentperf/capacity"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/sim"
	"github.com/agentperf/agentperf/slo"
)

// TestSearchFindsSimKnee runs Search against the simulator with a
// capacity computed from its timing model, with a closed-loop client of
// fixed requests: prompts of P unique token ids (no prefix-cache hit),
// one output token, and a step budget (max-num-batched-tokens) of exactly
// P, so the engine prefills one request per step of P/R seconds (R the
// prefill rate; the decode knobs are set to nothing). With c clients each
// request waits for the c−1 ahead of it, so its TTFT is c·P/R and p99
// TTFT ≤ (K+¾)·P/R holds for c ≤ K and fails above. Timer and HTTP
// overheads only make requests slower (about 1 ms a step when measured),
// which can lower the knee found, never raise it: the threshold's quarter
// step of slack keeps K itself feasible up to 2.5 ms of overhead a step,
// and the resolution absorbs more. The search must find K within the
// resolution, in PredictProbes probes.
func TestSearchFindsSimKnee(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 20 s of simulated load")
	}
	const (
		P   = 1024    // prompt tokens (64 blocks of 16)
		R   = 25600.0 // prefill tokens/s: a 40 ms step
		K   = 12      // the knee
		res = 2
	)
	step := P / R * 1000 // ms
	threshold := (K + 0.75) * step
	cfg := sim.DefaultConfig()
	cfg.PrefillTokensPerSec = R
	cfg.MaxNumBatchedTokens = P
	cfg.DecodeBaseMs, cfg.DecodePerSeqMs, cfg.DecodeMsPer1kContext = 1e-6, -1, -1
	cfg.MaxModelLen = 4096
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	objective, err := slo.Parse(fmt.Sprintf("ttft.p99<=%gms", threshold))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var nonce atomic.Uint32
	ttftCol := -1
	for i, m := range metrics.Metrics {
		if m.Tag == "time_to_first_token" {
			ttftCol = i
		}
	}
	probe := func(ctx context.Context, c, attempt int) (capacity.Probe, error) {
		const d = 2 * time.Second
		deadline := time.Now().Add(d)
		var mu sync.Mutex
		run := &slo.Run{Duration: d.Seconds()}
		var wg sync.WaitGroup
		var failed atomic.Int64
		for range c {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					ids := make([]uint32, P)
					n := nonce.Add(1)
					for i := range ids {
						ids[i] = 1000 + (n*7919+uint32(i)*31)%30000
					}
					body, _ := json.Marshal(map[string]any{"model": "agentperf-sim", "prompt": ids, "max_tokens": 1, "ignore_eos": true})
					t0 := time.Now()
					resp, err := client.Post(s.URL+"/v1/completions", "application/json", bytes.NewReader(body))
					if err != nil {
						failed.Add(1)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					ms := float64(time.Since(t0).Microseconds()) / 1000
					v := make([]float64, len(metrics.Metrics))
					for i := range v {
						v[i] = math.NaN()
					}
					v[ttftCol] = ms
					mu.Lock()
					run.Values = append(run.Values, v)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if failed.Load() > 0 {
			return capacity.Probe{}, fmt.Errorf("%d requests failed", failed.Load())
		}
		r := objective.Evaluate(run)
		return capacity.Probe{Met: r.Met, Detail: fmt.Sprintf("p99 TTFT %.0f ms (model: %.0f ms) over %d requests", r.Terms[0].Observed, float64(c)*step, r.Requests)}, nil
	}
	got, err := capacity.Search(context.Background(), capacity.Config{Lo: 1, Hi: 1024, Resolution: capacity.Resolution{Abs: res}, Logf: t.Logf}, probe)
	if err != nil {
		t.Fatal(err)
	}
	if got.Best > K || got.Best+res < K {
		t.Errorf("capacity %d, want the knee %d within the resolution %d (p99 TTFT %.0f ms crosses %.0f ms between %d and %d)", got.Best, K, res, K*step, threshold, K, K+1)
	}
	if want := capacity.PredictProbes(1, 1024, res, K); len(got.Probes) != want {
		t.Errorf("%d probes, the method predicts %d", len(got.Probes), want)
	}
	if st := s.Stats(); st.PrefixHits != 0 {
		t.Errorf("the prompts hit the prefix cache (%d tokens): the timing model assumed none", st.PrefixHits)
	}
}
