// Package sim is a vLLM-like OpenAI-compatible server for tests, demos and
// client benchmarks. It owns everything a replay needs from a server when
// no GPU is available: the OpenAI wire format (chat and text completions,
// streaming SSE and plain JSON), token counting with a
// tokenizer tokenizer, a prefix cache with chained block hashes, a
// GPU KV capacity with LRU eviction and an optional CPU offload tier, the
// context-window check with vLLM's and SGLang's exact error texts, a timing
// model (prefill rate, decode step time growing with the batch, a waiting
// queue, preemption), a Prometheus /metrics page with vLLM's metric names,
// several data-parallel engines, and deterministic fault injection.
//
// A Server has the shape of net/http/httptest's: build a Config (zero
// values mean the documented defaults, see DefaultConfig), call New, then
// Start (binds 127.0.0.1:0 unless Config.Addr is set and fills URL), and
// Close (waits for in-flight requests).
//
// # Endpoints
//
//	POST /v1/chat/completions   chat.completion / chat.completion.chunk (SSE)
//	POST /v1/completions        text_completion (JSON or SSE)
//	GET  /v1/models             the served model
//	GET  /health                200, empty body
//	GET  /metrics               Prometheus text format 0.0.4, vllm: names
//	POST /reset_prefix_cache    empty the prefix cache (vLLM's endpoint), 200
//	POST /flush_cache           the same (SGLang's endpoint), 200 "Cache flushed."
//
// A reset drops every cached block no running request holds and the whole
// offload tier (Server.ResetPrefixCache) and is counted per engine in
// agentperf_sim:prefix_cache_resets_total.
//
// # Timing model
//
// Each engine runs one scheduler goroutine that advances all running
// sequences by one engine step at a time, like vLLM's continuous batching:
// running sequences decode first (one token each), then the remaining token
// budget (MaxNumBatchedTokens) goes to chunked prefill of running and newly
// admitted sequences. A step lasts
//
//	DecodeBaseMs + DecodePerSeqMs·decoding + DecodeMsPer1kContext·Σcontext/1000
//	  + 1000·prefill tokens/PrefillTokensPerSec   (milliseconds)
//
// so per-token latency grows with the number of running sequences and their
// context, and prefill time is the uncached prompt tokens over the prefill
// rate. Handlers are woken once per emitted chunk, never per token timer, so
// thousands of concurrent streams cost one timer per engine. With
// ZeroLatency no goroutine sleeps at all: the cache is still consulted and
// updated, and the whole response is written at once.
//
// # Prefix cache
//
// A prompt is rendered through a ChatML-like template (role markers, see
// renderChat) and tokenized; full blocks of BlockSize tokens get chained
// hashes (hash of the previous block's hash and this block's token ids).
// Lookup takes the longest run of leading blocks present in the GPU tier,
// then continues in the offload tier ("external" hits, like LMCache or
// vLLM's CPU offloading connector). At least one token is always computed,
// as in vLLM. Running requests hold references to their blocks; only
// unreferenced blocks are evicted, least recently used first; an evicted
// block moves to the offload tier when there is one. Blocks are entered in
// the cache when a request is admitted (before its prefill completes), so
// an identical prefix arriving during that prefill already hits. Generated
// tokens are not cached (a replay sends recorded assistant text, which the
// server did not generate). When a running sequence needs a block and none
// is free, the newest running sequence is preempted (its blocks freed, its
// prompt and generated tokens recomputed on readmission, counted in
// vllm:num_preemptions_total).
//
// With ZeroLatency there is no scheduler: MaxNumSeqs is not enforced,
// vllm:num_requests_running counts requests being written, and a request
// whose blocks do not fit (all referenced by concurrent requests) is served
// without entering the cache.
//
// # Metrics
//
// Token counters follow vLLM: prefix_cache_queries counts the prompt
// tokens looked up at each admission (a preempted request is looked up
// again), prefix_cache_hits the GPU-tier hits; with an offload tier,
// external_prefix_cache_queries counts the tokens not found on the GPU and
// external_prefix_cache_hits those found in the offload tier.
// prompt_tokens, prompt_tokens_by_source and usage.cached_tokens (GPU plus
// offload hits) count each request once, at its first admission. The
// offload metrics (external_*, cpu_kv_cache_usage_perc,
// kv_offload_bytes_*) are exported only when the tier exists.
//
// # Faults
//
// Each completion request (counted from 1) gets at most one fault, chosen
// by FaultConfig's rules in this order: HTTP 500, 503 (Retry-After), 429
// (Retry-After), TCP reset before the headers, slow first byte, TCP reset
// after half of the tokens, a stall after half of the tokens, one malformed
// SSE line, an in-stream {"error":{…}} event followed by [DONE], and a
// missing usage chunk. Rates are drawn from a hash of (Seed, request
// number), so the same seed faults the same request numbers whatever the
// interleaving. A down window resets every request and every new
// connection for a while, then the server serves again.
package sim
