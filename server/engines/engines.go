package engines

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Engine is what agentperf knows about one inference engine. Metric names
// are export names: a counter's name without its _total suffix, as
// servermetrics stores it. In each list the first name present wins (a
// newer name before the older one it replaced). An empty list means the
// engine exports no such series; Missing says so in words.
type Engine struct {
	// Name is the engine's id in artifacts (server_metrics_backend,
	// report's adapter): vllm, sglang, trtllm, dynamo, llamacpp.
	Name string
	// Title is how people write it.
	Title string
	// Prefixes are the metric-name prefixes of its families; a /metrics
	// page with a family of one of them is this engine's (Detect).
	Prefixes []string
	// MetricsPath is where its Prometheus text is served.
	MetricsPath string

	// Running and Waiting are gauges of requests running and queued.
	Running, Waiting []string
	// KVUsage is a gauge of the GPU KV cache in use (0–1; a value above
	// 1.5 is read as percent); CPUKVUsage the offload tier's.
	KVUsage, CPUKVUsage []string
	// PrefixQueries and PrefixHits are token counters of the prefix-cache
	// lookups and the tokens found (vLLM's hit rate = hits / queries).
	PrefixQueries, PrefixHits []string
	// ExternalQueries and ExternalHits are the same for the external tier
	// (LMCache, CPU offload), queried only for what the GPU missed.
	ExternalQueries, ExternalHits []string
	// CachedTokens is a counter of prompt tokens served from the cache,
	// for engines without hit and query counters. With CacheSourceLabel
	// set, its series are split by that label: "device" is the GPU tier,
	// "host" the external one (SGLang HiCache).
	CachedTokens     []string
	CacheSourceLabel string
	// HitRateGauge is a gauge of the hit rate, the last resort.
	HitRateGauge []string
	// PromptTokens and GenerationTokens are token counters.
	PromptTokens, GenerationTokens []string
	// PromptExcludesCached is true when PromptTokens counts only the
	// tokens computed, not those read from the cache (llama.cpp): the
	// looked-up prompt tokens are then PromptTokens + CachedTokens, where
	// vLLM's and SGLang's prompt counters already hold every prompt token.
	PromptExcludesCached bool
	// PromptBySource is vLLM's prompt-token counter labelled source
	// (local_compute, local_cache_hit, external_kv_transfer).
	PromptBySource []string
	// Preemptions is a counter of preempted (retracted) requests.
	Preemptions []string
	// Offload byte counters: by direction, or one family with a
	// transfer_type label (GPU_to_CPU, CPU_to_GPU).
	OffloadBytesG2C, OffloadBytesC2G, OffloadBytes []string
	// OffloadTimeG2C, OffloadTimeC2G, OffloadTime are the matching time
	// counters (seconds), for the transfer bandwidth.
	OffloadTimeG2C, OffloadTimeC2G, OffloadTime []string
	// HostUsedTokens and HostTotalTokens are the external tier's gauges
	// of tokens held and its capacity (SGLang HiCache).
	HostUsedTokens, HostTotalTokens []string
	// KVPoolMetric is the family whose value (or labels) give the KV
	// pool's size in tokens; KVPool says where it is found otherwise.
	KVPoolMetric []string
	KVPool       string
	// OverflowTexts are substrings of its context-overflow error texts
	// (matched case-insensitively); OverflowExamples the whole texts.
	OverflowTexts, OverflowExamples []string
	// OverflowAdvice says which server settings set the per-request
	// context window.
	OverflowAdvice string
	// Missing names the figures the engine does not export, said in their
	// place ("" when it exports all of them).
	Missing string
}

// table is the one list of engines, in the order in which their name
// lists are merged (Names) and ties are broken (Detect). Sources are in
// docs/engines.md.
var table = []Engine{
	{
		Name: "vllm", Title: "vLLM", Prefixes: []string{"vllm:"}, MetricsPath: "/metrics",
		Running: []string{"vllm:num_requests_running"}, Waiting: []string{"vllm:num_requests_waiting"},
		KVUsage:         []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
		CPUKVUsage:      []string{"vllm:cpu_kv_cache_usage_perc", "vllm:cpu_cache_usage_perc"},
		PrefixQueries:   []string{"vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries"},
		PrefixHits:      []string{"vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits"},
		ExternalQueries: []string{"vllm:external_prefix_cache_queries"},
		ExternalHits:    []string{"vllm:external_prefix_cache_hits"},
		PromptTokens:    []string{"vllm:prompt_tokens"}, GenerationTokens: []string{"vllm:generation_tokens"},
		PromptBySource:  []string{"vllm:prompt_tokens_by_source"},
		Preemptions:     []string{"vllm:num_preemptions"},
		OffloadBytesG2C: []string{"vllm:kv_offload_bytes_gpu_to_cpu"}, OffloadBytesC2G: []string{"vllm:kv_offload_bytes_cpu_to_gpu"},
		OffloadBytes:   []string{"vllm:kv_offload_total_bytes", "vllm:kv_offload_bytes"},
		OffloadTimeG2C: []string{"vllm:kv_offload_time_gpu_to_cpu"}, OffloadTimeC2G: []string{"vllm:kv_offload_time_cpu_to_gpu"},
		OffloadTime:   []string{"vllm:kv_offload_total_time"},
		KVPoolMetric:  []string{"vllm:cache_config_info"},
		KVPool:        "vllm:cache_config_info labels num_gpu_blocks × block_size, or the log line \"GPU KV cache size: N tokens\"",
		OverflowTexts: []string{"context length", "maximum context", "max_total_tokens"},
		OverflowExamples: []string{
			"This model's maximum context length is 131072 tokens. However, you requested 140000 tokens (139000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
			"max_output_tokens=1000 cannot be greater than max_total_tokens=131072",
		},
		OverflowAdvice: "vLLM's per-request window is --max-model-len: restart the server with a larger one (it must fit the KV cache)",
	},
	{
		Name: "sglang", Title: "SGLang", Prefixes: []string{"sglang:"}, MetricsPath: "/metrics",
		Running: []string{"sglang:num_running_reqs"}, Waiting: []string{"sglang:num_queue_reqs"},
		KVUsage:      []string{"sglang:token_usage"},
		CachedTokens: []string{"sglang:cached_tokens"}, CacheSourceLabel: "cache_source",
		HitRateGauge: []string{"sglang:cache_hit_rate"},
		PromptTokens: []string{"sglang:prompt_tokens"}, GenerationTokens: []string{"sglang:generation_tokens"},
		Preemptions:    []string{"sglang:num_retracted_reqs"},
		HostUsedTokens: []string{"sglang:hicache_host_used_tokens"}, HostTotalTokens: []string{"sglang:hicache_host_total_tokens"},
		KVPoolMetric:  []string{"sglang:max_total_num_tokens"},
		KVPool:        "sglang:max_total_num_tokens, or the log line \"max_total_num_tokens=N\"",
		OverflowTexts: []string{"context length", "maximum context"},
		OverflowExamples: []string{
			"Requested token count exceeds the model's maximum context length of 131072 tokens. You requested a total of 140000 tokens: 139000 tokens from the input messages and 1000 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.",
			"The input (140000 tokens) is longer than the model's context length (131072 tokens).",
		},
		OverflowAdvice: "SGLang's per-request window is --context-length: restart the server with a larger one",
	},
	{
		Name: "trtllm", Title: "TensorRT-LLM", Prefixes: []string{"trtllm_", "trtllm:"}, MetricsPath: "/prometheus/metrics",
		KVPool:        "the server log (the KV cache manager's max tokens); trtllm-serve's JSON /metrics (iteration stats, kvCacheStats) is not Prometheus text and is not scraped",
		OverflowTexts: []string{"should not exceed max_seq_len"},
		OverflowExamples: []string{
			"The sum of prompt length (140000) and query length (0) max_tokens (1000) should not exceed max_seq_len (131072)",
		},
		OverflowAdvice: "TensorRT-LLM's per-request window is max_seq_len (and max_num_tokens): rebuild or restart with larger ones",
		Missing:        "its Prometheus page has request counters and latency histograms only: no running/waiting gauges, KV usage or prefix-cache counters",
	},
	{
		Name: "dynamo", Title: "Dynamo", Prefixes: []string{"dynamo_"}, MetricsPath: "/metrics",
		Running:      []string{"dynamo_frontend_inflight_requests"},
		Waiting:      []string{"dynamo_frontend_queued_requests"},
		KVUsage:      []string{"dynamo_component_gpu_cache_usage_percent"},
		CachedTokens: []string{"dynamo_frontend_cached_tokens"},
		HitRateGauge: []string{"dynamo_component_router_kv_hit_rate", "dynamo_component_router_shared_cache_hit_rate"},
		PromptTokens: []string{"dynamo_frontend_input_sequence_tokens"}, GenerationTokens: []string{"dynamo_frontend_output_tokens"},
		KVPool:         "the engine behind it (its own /metrics or log: vLLM's or SGLang's)",
		OverflowTexts:  []string{"context length", "maximum context"},
		OverflowAdvice: "Dynamo passes the engine's limit on: raise the worker engine's window (vLLM --max-model-len, SGLang --context-length)",
	},
	{
		Name: "llamacpp", Title: "llama.cpp", Prefixes: []string{"llamacpp:"}, MetricsPath: "/metrics (with --metrics)",
		Running: []string{"llamacpp:requests_processing"}, Waiting: []string{"llamacpp:requests_deferred"},
		CachedTokens: []string{"llamacpp:prompt_tokens_cached"},
		PromptTokens: []string{"llamacpp:prompt_tokens"}, GenerationTokens: []string{"llamacpp:tokens_predicted"},
		PromptExcludesCached: true,
		KVPool:               "-c (n_ctx) from /props or the log line \"n_ctx = N\"; each of the -np slots gets -c / -np unless --kv-unified",
		OverflowTexts:        []string{"exceed_context_size_error", "exceeds the available context size", "larger than the max context size", "context size has been exceeded"},
		OverflowExamples: []string{
			"request (17421 tokens) exceeds the available context size (16384 tokens), try increasing it",
			"input (17421 tokens) is larger than the max context size (16384 tokens). skipping",
			"Context size has been exceeded.",
		},
		OverflowAdvice: "llama.cpp's per-request window is -c / -np (the context split over the parallel slots) unless --kv-unified is set: restart llama-server with a larger -c, fewer -np, or --kv-unified",
		Missing:        "it exports no KV-usage gauge and has no external cache tier",
	},
}

// All returns every engine of the table, in table order (a copy).
func All() []Engine { return slices.Clone(table) }

// Lookup returns the engine named name (an Engine.Name).
func Lookup(name string) (Engine, bool) {
	for _, e := range table {
		if e.Name == name {
			return e, true
		}
	}
	return Engine{}, false
}

// Names merges one list of every engine in table order, without
// duplicates: the names a reader tries when it does not know the engine
// (the first present wins).
func Names(field func(*Engine) []string) []string {
	var out []string
	for i := range table {
		for _, n := range field(&table[i]) {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// OverflowSubstrings are the overflow texts of every engine (lowercased,
// in table order, without duplicates): the classifier's defaults add
// them to aiperf's allowlist.
func OverflowSubstrings() []string {
	return Names(func(e *Engine) []string {
		out := make([]string, len(e.OverflowTexts))
		for i, s := range e.OverflowTexts {
			out[i] = strings.ToLower(s)
		}
		return out
	})
}

// Detection is what a /metrics page says about its engine.
type Detection struct {
	// Engine is the engine detected; nil when no family has a known
	// prefix (or no family was seen).
	Engine *Engine
	// Families are the metric families seen, sorted.
	Families []string
}

// Known reports whether an engine was detected.
func (d Detection) Known() bool { return d.Engine != nil }

// Unknown reports whether families were seen but none is an engine's.
func (d Detection) Unknown() bool { return d.Engine == nil && len(d.Families) > 0 }

// Name is the detected engine's Name, "unknown" when families of no known
// engine were seen, "" when none were.
func (d Detection) Name() string {
	switch {
	case d.Engine != nil:
		return d.Engine.Name
	case len(d.Families) > 0:
		return "unknown"
	}
	return ""
}

// Detect names the engine of a server from the metric families it
// exports. Dynamo's frontend re-exports its workers' engine metrics, so
// a dynamo_ family makes it Dynamo whatever else is there; otherwise the
// engine with the most families wins (ties by table order).
func Detect(families []string) Detection {
	d := Detection{Families: slices.Clone(families)}
	sort.Strings(d.Families)
	count := make([]int, len(table))
	for _, f := range families {
		for i := range table {
			for _, p := range table[i].Prefixes {
				if strings.HasPrefix(f, p) {
					count[i]++
				}
			}
		}
	}
	best := -1
	for i := range table {
		if table[i].Name == "dynamo" && count[i] > 0 {
			best = i
			break
		}
		if count[i] > 0 && (best < 0 || count[i] > count[best]) {
			best = i
		}
	}
	if best >= 0 {
		e := table[best]
		d.Engine = &e
	}
	return d
}

// UnknownText says that a server's engine is not in the table, with the
// families it exports (at most max of them; 0: all) and how to proceed.
func (d Detection) UnknownText(max int) string {
	fams := d.Families
	more := ""
	if max > 0 && len(fams) > max {
		more = fmt.Sprintf(" and %d more", len(fams)-max)
		fams = fams[:max]
	}
	return fmt.Sprintf("server engine unknown (%d metric families: %s%s): agentperf knows %s; its server figures are not derived, the scrapes are in the export; see docs/engines.md to add it",
		len(d.Families), strings.Join(fams, ", "), more, knownList())
}

// knownList is the engines' titles, joined.
func knownList() string {
	t := make([]string, len(table))
	for i, e := range table {
		t[i] = e.Title
	}
	return strings.Join(t, ", ")
}

// Advice is the overflow advice for the engine named name; for an engine
// not in the table (or none), every engine's setting is named.
func Advice(name string) string {
	if e, ok := Lookup(name); ok {
		return e.OverflowAdvice
	}
	return "raise the server's per-request context window: vLLM --max-model-len, SGLang --context-length, llama.cpp -c / -np (or --kv-unified), TensorRT-LLM max_seq_len"
}
