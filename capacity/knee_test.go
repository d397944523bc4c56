package capacity_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentperf/agentperf/analysis/slo"
	"github.com/agentperf/agentperf/capacity"
	"github.com/agentperf/agentperf/internal/testshared"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/server/sim"
)

// TestSearchFindsSimKnee runs Search against the simulator with a
// capacity computed from its timing model, driven by a closed-loop client
// of identical streamed requests: prompts of P unique token ids (no
// prefix-cache hit), O output tokens (ignore_eos), max-num-seqs M, and a
// KV cache that holds M of them at once (no preemption). Up to M clients
// are all running: a request's first token comes after one engine step
// with its prefill, TTFT ≈ step(M) + P/R ms. Beyond M, a request waits for
// a running one to finish: the running ones were admitted together and
// finish together, so one request in c waits a whole request, TTFT ≈
// O·step(M) — more than 1 % of requests, so p99 TTFT jumps from tens of
// milliseconds to about a second at c = M+1. The threshold sits between
// the two (the test checks that the model puts it there), far from both,
// so timer and scheduling overheads of a loaded machine (tens of ms a
// step under the race detector) cannot move the knee. The search must
// find M within the resolution, in PredictProbes probes.
func TestSearchFindsSimKnee(t *testing.T) {
	testshared.SkipIfShort(t, "runs about 30 s of simulated load")
	const (
		P   = 64  // prompt tokens (4 blocks of 16)
		O   = 100 // output tokens
		M   = 12  // max-num-seqs: the knee
		res = 2
	)
	cfg := sim.DefaultConfig()
	cfg.MaxNumSeqs = M
	cfg.DecodeBaseMs, cfg.DecodePerSeqMs, cfg.DecodeMsPer1kContext = 10, 0.02, 0.055
	cfg.MaxModelLen = 4096
	cfg.KVCapacityTokens = 8192
	// The timing model (server/sim/engine.go: a step is base + per-seq·n + ctx·tokens/1000 + 1000·prefill/R ms).
	stepMs := func(n, ctxTokens, prefill int) float64 {
		return cfg.DecodeBaseMs + cfg.DecodePerSeqMs*float64(n) + cfg.DecodeMsPer1kContext*float64(ctxTokens)/1000 + 1000*float64(prefill)/cfg.PrefillTokensPerSec
	}
	below := stepMs(M, M*(P+O), P)          // the worst first token at c ≤ M: a full batch decoding beside the prefill
	above := float64(O) * stepMs(M, M*P, 0) // a whole request's decode at c = M+1
	threshold := 500.0
	if !(below*5 < threshold && threshold*2 < above) || cfg.KVCapacityTokens < M*(P+O+cfg.BlockSize) {
		t.Fatalf("the model does not put a clear knee at M: first token %.1f ms below it, %.0f ms above, threshold %.0f ms, KV %d tokens for %d", below, above, threshold, cfg.KVCapacityTokens, M*(P+O))
	}
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
	// send sends one streamed request and returns its time to the first
	// data event.
	send := func() (float64, error) {
		ids := make([]uint32, P)
		n := nonce.Add(1)
		for i := range ids {
			ids[i] = 1000 + (n*7919+uint32(i)*31)%30000
		}
		body, _ := json.Marshal(map[string]any{"model": "agentperf-sim", "prompt": ids, "max_tokens": O, "ignore_eos": true, "stream": true})
		t0 := time.Now()
		resp, err := client.Post(s.URL+"/v1/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		first := -1.0
		for {
			line, err := br.ReadString('\n')
			if first < 0 && strings.HasPrefix(line, "data: ") && !strings.HasPrefix(line, "data: [DONE]") {
				first = float64(time.Since(t0).Microseconds()) / 1000
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return 0, err
			}
		}
		if first < 0 || resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("status %d, no data event", resp.StatusCode)
		}
		return first, nil
	}
	probe := func(ctx context.Context, c, attempt int) (capacity.Probe, error) {
		const d = 3 * time.Second
		deadline := time.Now().Add(d)
		var mu sync.Mutex
		run := &slo.Run{Duration: d.Seconds()}
		var wg sync.WaitGroup
		var failed atomic.Value
		var n atomic.Int64
		for range c {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// At least the samples a p99 needs (slo.MinSamples), also
				// on a slow machine (-race).
				for time.Now().Before(deadline) || n.Load() < int64(slo.MinSamples("p99")) {
					n.Add(1)
					ms, err := send()
					if err != nil {
						failed.Store(err)
						return
					}
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
		if err, _ := failed.Load().(error); err != nil {
			return capacity.Probe{}, err
		}
		r := objective.Evaluate(run)
		return capacity.Probe{Met: r.Met, Inconclusive: r.Undecided, Why: "too few requests", Detail: fmt.Sprintf("p99 TTFT %.0f ms over %d requests", r.Terms[0].Observed, r.Requests)}, nil
	}
	got, err := capacity.Search(context.Background(), capacity.Config{Lo: 1, Hi: 1024, Resolution: capacity.Resolution{Abs: res}, Logf: t.Logf}, probe)
	if err != nil {
		t.Fatal(err)
	}
	if got.Best > M || got.Best+res < M {
		t.Errorf("capacity %d, want the knee %d within the resolution %d (the model: p99 TTFT about %.0f ms up to %d, %.0f ms beyond, threshold %.0f ms)", got.Best, M, res, below, M, above, threshold)
	}
	if want := capacity.PredictProbes(1, 1024, res, M); len(got.Probes) != want {
		t.Errorf("%d probes, the method predicts %d", len(got.Probes), want)
	}
	if st := s.Stats(); st.PrefixHits != 0 {
		t.Errorf("the prompts hit the prefix cache (%d tokens): the timing model assumed none", st.PrefixHits)
	}
}
