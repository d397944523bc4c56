package inferencex

import (
	"strings"
	"testing"
)

func TestParseServerLog(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		log     string
		tokens  int64
		engines int
		ok      bool
	}{
		{"vLLM, one line per engine, repeated lines counted once",
			"INFO (EngineCore_DP0 pid=100) GPU KV cache size: 5,000,000 tokens\n" +
				"INFO (EngineCore_DP0 pid=100) GPU KV cache size: 5,000,000 tokens\n" +
				"INFO (EngineCore_DP1 pid=101) GPU KV cache size: 6,500,000 tokens\n", 11_500_000, 2, true},
		{"vLLM without an engine tag", "INFO 07-01 [kv_cache_utils.py:716] GPU KV cache size: 1,234,560 tokens\r\n", 1_234_560, 1, true},
		{"vLLM restart: the last size of an engine wins",
			"(EngineCore_0 pid=1) GPU KV cache size: 100 tokens\n(EngineCore_0 pid=2) GPU KV cache size: 200 tokens\n", 200, 1, true},
		{"SGLang: max_total_num_tokens × dp_size",
			"[2026-07-08 16:43:35] server_args=ServerArgs(tp_size=4, dp_size=4)\n" +
				"[2026-07-08 16:49:59 DP0 TP0 EP0] max_total_num_tokens=4602880, chunked_prefill_size=4096\n", 18_411_520, 4, true},
		{"SGLang: every DP rank logged its own",
			"server_args=ServerArgs(dp_size=2)\n[DP0 TP0] max_total_num_tokens=1000, x\n[DP1 TP1] max_total_num_tokens=1200, x\n", 2200, 2, true},
		{"SGLang without dp_size", "max_total_num_tokens=777\n", 777, 1, true},
		{"nothing", "INFO vLLM API server version 0.21.0\nGPU KV cache size: lots of tokens\n", 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			lg, err := ParseServerLog(strings.NewReader(c.log))
			if err != nil {
				t.Fatal(err)
			}
			p, ok := lg.Pool()
			if ok != c.ok || p.Tokens != c.tokens || (ok && p.Engines != c.engines) {
				t.Errorf("pool %+v ok %v, want %d tokens over %d engines (ok %v)", p, ok, c.tokens, c.engines, c.ok)
			}
		})
	}
}

// TestServerLogBeatsMetrics: a given server log's pool is used (it is
// what InferenceX reads), and a disagreement with cache_config_info is a
// warning, not silent.
func TestServerLogBeatsMetrics(t *testing.T) {
	t.Parallel()
	run, err := Load(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := LoadEnv(MapLookup(fixtureEnv))
	lg, _ := ParseServerLog(strings.NewReader("(EngineCore_DP0) GPU KV cache size: 20,000 tokens\n(EngineCore_DP1) GPU KV cache size: 20,000 tokens\n"))
	res, err := run.InferenceX(Options{Env: env, ServerLogs: []*ServerLog{lg}})
	if err != nil {
		t.Fatal(err)
	}
	doc := decodeResult(t, res)
	if doc["kv_cache_pool_tokens"] != 40000.0 || dig(t, doc, "server_metrics", "kv_cache", "gpu_total_tokens") != 40000.0 {
		t.Errorf("pool %v, want the log's 40000", doc["kv_cache_pool_tokens"])
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "the server log states 40000 tokens") || !strings.Contains(w, "32000") {
		t.Errorf("warnings %q", res.Warnings)
	}
	// Without a log: num_gpu_blocks × block_size of both engines.
	res, _ = run.InferenceX(Options{Env: env})
	if doc := decodeResult(t, res); doc["kv_cache_pool_tokens"] != 32000.0 {
		t.Errorf("pool from cache_config_info = %v, want 32000", doc["kv_cache_pool_tokens"])
	}
	// A log that states nothing is said so.
	empty, _ := ParseServerLog(strings.NewReader("INFO nothing here\n"))
	res, _ = run.InferenceX(Options{Env: env, ServerLogs: []*ServerLog{empty}})
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "states no KV pool size") {
		t.Errorf("warnings %q", res.Warnings)
	}
}

// FuzzParseServerLog: any bytes parse without panicking; a pool, when
// found, is positive and the sizes found are positive.
func FuzzParseServerLog(f *testing.F) {
	f.Add([]byte("(EngineCore_DP0 pid=100) GPU KV cache size: 5,000,000 tokens\n"))
	f.Add([]byte("server_args=ServerArgs(dp_size=4)\n[DP0 TP0] max_total_num_tokens=4602880, x\n"))
	f.Add([]byte("GPU KV cache size: 99999999999999999999999 tokens\nmax_total_num_tokens=9223372036854775807 dp_size=1048575\n"))
	f.Add([]byte("\x00\xff\nGPU KV cache size: ,,,, tokens\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		lg, err := ParseServerLog(strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range lg.VLLM {
			if n <= 0 {
				t.Fatalf("vLLM size %d", n)
			}
		}
		if p, ok := lg.Pool(); ok && p.Tokens <= 0 {
			t.Fatalf("pool %+v", p)
		}
	})
}

// TestParseServerLogLlamaCpp: llama.cpp's context line (its -c, every
// slot's KV cells together) is the KV pool of a llama-server log.
func TestParseServerLogLlamaCpp(t *testing.T) {
	t.Parallel()
	log := "llama_context: constructing llama_context\nllama_context: n_seq_max     = 4\nllama_context: n_ctx         = 65536\nllama_context: n_ctx_seq     = 16384\n"
	lg, err := ParseServerLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := lg.Pool()
	if !ok || p.Tokens != 65536 || !strings.Contains(p.Source, "llama.cpp n_ctx") {
		t.Fatalf("pool %+v %v, want 65536 from llama.cpp's n_ctx (not n_ctx_seq)", p, ok)
	}
}
