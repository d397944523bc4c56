package inferencex

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// This file recomputes the result's request figures from the fixture's
// raw records with its own small implementations (not the package's), so
// that a wrong derivation in the package cannot hide behind a golden file.

type rawRec struct {
	Metadata map[string]any            `json:"metadata"`
	Metrics  map[string]map[string]any `json:"metrics"`
	Error    any                       `json:"error"`
}

func loadRaw(t *testing.T) []rawRec {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtureDir, "profile_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []rawRec
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r rawRec
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// kept: profiling phase and no error.
func keptRaw(all []rawRec) []rawRec {
	var out []rawRec
	for _, r := range all {
		if r.Metadata["benchmark_phase"] == "profiling" && r.Error == nil {
			out = append(out, r)
		}
	}
	return out
}

func col(rs []rawRec, tag string, scale float64) []float64 {
	var out []float64
	for _, r := range rs {
		if m, ok := r.Metrics[tag]; ok {
			out = append(out, m["value"].(float64)*scale)
		}
	}
	return out
}

// q is the p-quantile with linear interpolation: the value at fractional
// rank p·(n−1) of the sorted values.
func q(xs []float64, p float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := p * float64(len(s)-1)
	i := int(rank)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	w := rank - float64(i)
	return (1-w)*s[i] + w*s[i+1]
}

func avg(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}

func sd(xs []float64) float64 {
	m := avg(xs)
	t := 0.0
	for _, x := range xs {
		t += (x - m) * (x - m)
	}
	return math.Sqrt(t / float64(len(xs)))
}

type want map[string]float64

func stats(xs []float64) want {
	return want{"mean": avg(xs), "p50": q(xs, .5), "p75": q(xs, .75), "p90": q(xs, .9), "p95": q(xs, .95), "std": sd(xs)}
}

// inv: 1/stat for the location statistics, std of the reciprocals.
func inv(xs []float64) want {
	w := stats(xs)
	var r []float64
	for _, x := range xs {
		r = append(r, 1/x)
	}
	return want{"mean": 1 / w["mean"], "p50": 1 / w["p50"], "p75": 1 / w["p75"], "p90": 1 / w["p90"], "p95": 1 / w["p95"], "std": sd(r)}
}

func closeTo(got any, want float64, rel float64) bool {
	g, ok := got.(float64)
	if !ok {
		return false
	}
	return math.Abs(g-want) <= rel*math.Max(1, math.Abs(want))
}

// TestDerivationsIndependently checks every request-side figure of both
// schemas against a recomputation from the raw fixture records, plus the
// hand-computed values of the fixture for a few (in comments).
func TestDerivationsIndependently(t *testing.T) {
	t.Parallel()
	all := loadRaw(t)
	kept := keptRaw(all)
	if len(all) != 8 || len(kept) != 4 {
		t.Fatalf("fixture: %d records, %d kept; want 8 and 4", len(all), len(kept))
	}
	ttft := col(kept, "time_to_first_token", 1e-3) // 0.1 0.2 0.3 0.4 s
	e2el := col(kept, "request_latency", 1e-3)     // 1 2 1 2 s
	itl := col(kept, "inter_token_latency", 1e-3)  // 0.01 0.02 0.01 0.04 s
	fitl := col(kept, "full_response_inter_token_latency", 1e-3)
	isl := col(kept, "input_sequence_length", 1)
	osl := col(kept, "output_sequence_length", 1)
	var ratio, expOut []float64
	for i := range kept {
		ratio = append(ratio, e2el[i]/osl[i])
		expOut = append(expOut, kept[i].Metadata["recorded_output_tokens"].(float64))
	}
	// Completions per 1 s window from the first completion (1 s, 2 s,
	// 2.5 s, 4 s after B): [1,2) one, [2,3) two, [3,4) none.
	qpsWindows := []float64{1, 2, 0}
	var sumIn, sumOut, hit, total, cache float64
	minStart, maxEnd := math.Inf(1), math.Inf(-1)
	for i, r := range kept {
		sumIn += isl[i]
		sumOut += osl[i]
		hit += r.Metadata["theoretical_hit_blocks"].(float64)
		total += r.Metadata["theoretical_total_blocks"].(float64)
		cache += r.Metrics["usage_prompt_cache_read_tokens"]["value"].(float64)
		minStart = math.Min(minStart, r.Metadata["request_start_ns"].(float64))
		maxEnd = math.Max(maxEnd, r.Metadata["request_end_ns"].(float64))
	}
	dur := (maxEnd - minStart) / 1e9 // 4 s
	const gpus = 8                   // TP 8 × PP 1 × PCP 1

	// Hand values of the fixture.
	hand := []struct {
		name      string
		got, want float64
	}{
		{"mean ttft", avg(ttft), 0.25}, {"p90 itl", q(itl, .9), 0.034}, {"duration", dur, 4},
		{"mean intvty", 1 / avg(itl), 50}, {"theoretical", hit / total, 16.0 / 30}, {"output tok/s", sumOut / dur, 68.5},
	}
	for _, h := range hand {
		if math.Abs(h.got-h.want) > 1e-9 {
			t.Fatalf("test arithmetic: %s = %v, want %v", h.name, h.got, h.want)
		}
	}

	blocks := map[string]want{
		"ttft": stats(ttft), "e2el": stats(e2el), "itl": stats(itl), "tpot": stats(itl), "intvty": inv(itl),
		"e2e_norm_intvty": inv(ratio), "full_response_itl": stats(fitl), "full_response_intvty": inv(fitl),
	}
	tokens := map[string]want{"input": stats(isl), "output_actual": stats(osl), "output_expected": stats(expOut)}

	_, v3 := fixtureResult(t, SchemaV3)
	const r5 = 1e-5 // v3 rounds to five decimals
	for name, w := range blocks {
		got := dig(t, v3, "request_metrics", "latency", name).(map[string]any)
		for k, x := range w {
			if !closeTo(got[k], x, r5) {
				t.Errorf("v3 latency.%s.%s = %v, want %v", name, k, got[k], x)
			}
		}
	}
	for name, w := range tokens {
		got := dig(t, v3, "request_metrics", "tokens", name).(map[string]any)
		for k, x := range w {
			if !closeTo(got[k], x, r5) {
				t.Errorf("v3 tokens.%s.%s = %v, want %v", name, k, got[k], x)
			}
		}
	}
	qw := stats(qpsWindows)
	gotQ := dig(t, v3, "request_metrics", "qps").(map[string]any)
	for k, x := range qw {
		if !closeTo(gotQ[k], x, r5) {
			t.Errorf("v3 qps.%s = %v, want %v", k, gotQ[k], x)
		}
	}
	if gotQ["samples"] != 3.0 || gotQ["window_seconds"] != 1.0 {
		t.Errorf("qps samples %v window %v, want 3 and 1", gotQ["samples"], gotQ["window_seconds"])
	}
	tp := dig(t, v3, "request_metrics", "throughput").(map[string]any)
	for _, c := range []struct {
		path []string
		want float64
	}{
		{[]string{"input", "tokens_per_second"}, sumIn / dur}, {[]string{"output", "tokens_per_second"}, sumOut / dur},
		{[]string{"total", "tokens_per_second"}, (sumIn + sumOut) / dur}, {[]string{"duration_seconds"}, dur},
		{[]string{"per_gpu", "total_tput_tps"}, (sumIn + sumOut) / dur / gpus},
		{[]string{"per_gpu", "output_tput_tps"}, sumOut / dur / gpus},
		{[]string{"per_gpu", "input_tput_tps"}, sumIn / dur / gpus},
	} {
		if got := dig(t, tp, c.path...); !closeTo(got, c.want, r5) {
			t.Errorf("v3 throughput.%v = %v, want %v", c.path, got, c.want)
		}
	}
	if got := dig(t, v3, "request_metrics", "cache", "theoretical_cache_hit_rate"); !closeTo(got, hit/total, r5) {
		t.Errorf("theoretical_cache_hit_rate = %v, want %v", got, hit/total)
	}
	// Counts: every record, profiled ones, and why the others were dropped.
	acc := dig(t, v3, "request_accounting").(map[string]any)
	for k, x := range map[string]float64{"records_total": 8, "records_profiled": 4, "records_dropped_total": 4,
		"records_warmup_dropped": 2, "records_error_dropped": 3} {
		if acc[k] != x {
			t.Errorf("request_accounting.%s = %v, want %v", k, acc[k], x)
		}
	}
	if v3["num_requests_total"] != 8.0 || v3["num_requests_successful"] != 4.0 {
		t.Errorf("num_requests_total %v, successful %v; want 8 and 4", v3["num_requests_total"], v3["num_requests_successful"])
	}

	_, v2 := fixtureResult(t, SchemaV2)
	const exact = 1e-12
	for name, w := range map[string]want{"ttft": stats(ttft), "e2el": stats(e2el), "itl": stats(itl), "tpot": stats(itl),
		"intvty": inv(itl), "input_tokens": stats(isl), "output_tokens_actual": stats(osl),
		"output_tokens_expected": stats(expOut), "qps": qw} {
		for _, k := range distKeysV2 {
			if got := v2[k+"_"+name]; !closeTo(got, w[k], exact) {
				t.Errorf("v2 %s_%s = %v, want %v", k, name, got, w[k])
			}
		}
	}
	for k, x := range map[string]float64{
		"input_tput_tps": sumIn / dur, "output_tput_tps": sumOut / dur, "total_tput_tps": (sumIn + sumOut) / dur,
		"duration_seconds": dur, "tput_per_gpu": (sumIn + sumOut) / dur / gpus, "output_tput_per_gpu": sumOut / dur / gpus,
		"input_tput_per_gpu": sumIn / dur / gpus, "theoretical_cache_hit_rate": hit / total,
		"response_cache_hit_rate": cache / sumIn, "total_requests_completed": 4,
		// Profiling records that got an answer (4 ok, 1 error, 1 cancelled);
		// InferenceX v0.2 wrote the successful count here.
		"num_requests_total": 6, "num_requests_successful": 4,
		// Server side: counters summed over the two engines.
		"server_gpu_cache_hit_rate": 800.0 / 2000, "server_cpu_cache_hit_rate": 250.0 / 1000,
		"kv_offload_bytes_gpu_to_cpu": 1e7, "kv_offload_time_cpu_to_gpu": 0.5,
		"total_prompt_tokens": 2000, "total_generation_tokens": 274, "kv_cache_pool_tokens": 32000,
	} {
		if got := v2[k]; !closeTo(got, x, exact) {
			t.Errorf("v2 %s = %v, want %v", k, got, x)
		}
	}
}
