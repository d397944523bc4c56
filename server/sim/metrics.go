package sim

import (
	"bufio"
	"io"
	"strconv"
)

// Histogram bucket upper bounds, in seconds, as vLLM defines them
// (vllm/v1/metrics/loggers.py).
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets  = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	e2eBuckets  = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// histogram is a fixed-bucket Prometheus histogram. Not safe for concurrent
// use (the engine's mutex guards it).
type histogram struct {
	bounds []float64
	counts []uint64 // per bucket, not cumulative; last is +Inf
	sum    float64
	count  uint64
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

// observeN records n observations of v seconds.
func (h *histogram) observeN(v float64, n uint64) {
	if n == 0 {
		return
	}
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i] += n
	h.sum += v * float64(n)
	h.count += n
}

func (h *histogram) observe(v float64) { h.observeN(v, 1) }

// finishReasons are the label values of vllm:request_success_total.
var finishReasons = [...]string{"stop", "length", "abort"}

const (
	finishStop = iota
	finishLength
	finishAbort
)

// engineMetrics are one engine's counters (token counters in tokens).
type engineMetrics struct {
	requests         int64 // requests admitted for the first time
	promptTokens     int64
	generationTokens int64
	prefixQueries    int64
	prefixHits       int64
	extQueries       int64
	extHits          int64
	srcLocalCompute  int64
	srcLocalHit      int64
	srcExternal      int64
	preemptions      int64
	cacheResets      int64 // prefix-cache resets (POST /reset_prefix_cache, /flush_cache)
	success          [len(finishReasons)]int64
	ttft, itl, e2e   histogram
}

func newEngineMetrics() engineMetrics {
	return engineMetrics{ttft: newHistogram(ttftBuckets), itl: newHistogram(itlBuckets), e2e: newHistogram(e2eBuckets)}
}

// engineSnapshot is a consistent copy of one engine's state for /metrics.
type engineSnapshot struct {
	m                      engineMetrics
	running, waiting       int
	kvUsage, cpuUsage      float64
	gpuToCPUB, cpuToGPUB   int64 // bytes
	evictions, offEvicted  int64
	gpuBlocks, offloadBlks int
}

// writeMetrics writes the Prometheus text exposition (format 0.0.4) of the
// engines' snapshots, one series per engine labelled engine="i". With lazy
// (Config.LazyMetrics), a series with a per-value label (source,
// finished_reason) is left out until its value is non-zero and a histogram
// series until it has an observation, as servers built on prometheus_client
// expose labelled children only once they are used.
func writeMetrics(w io.Writer, model string, blockSize int, offload, lazy bool, snaps []engineSnapshot) error {
	bw := bufio.NewWriterSize(w, 16<<10)
	labels := make([]string, len(snaps))
	for i := range snaps {
		labels[i] = `engine="` + strconv.Itoa(i) + `",model_name="` + escapeLabel(model) + `"`
	}
	family := func(name, typ, help string) {
		bw.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
	}
	sample := func(name, lbl string, v float64) {
		bw.WriteString(name)
		bw.WriteByte('{')
		bw.WriteString(lbl)
		bw.WriteString("} ")
		bw.Write(strconv.AppendFloat(nil, v, 'g', -1, 64))
		bw.WriteByte('\n')
	}
	simple := func(name, typ, help string, get func(*engineSnapshot) float64) {
		family(name, typ, help)
		for i := range snaps {
			sample(name, labels[i], get(&snaps[i]))
		}
	}
	family("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig")
	for i := range snaps {
		sample("vllm:cache_config_info", labels[i]+`,block_size="`+strconv.Itoa(blockSize)+`",enable_prefix_caching="True",num_cpu_blocks="`+
			strconv.Itoa(snaps[i].offloadBlks)+`",num_gpu_blocks="`+strconv.Itoa(snaps[i].gpuBlocks)+`"`, 1)
	}
	simple("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", func(s *engineSnapshot) float64 { return float64(s.running) })
	simple("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", func(s *engineSnapshot) float64 { return float64(s.waiting) })
	simple("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", func(s *engineSnapshot) float64 { return s.kvUsage })
	simple("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.", func(s *engineSnapshot) float64 { return float64(s.m.prefixQueries) })
	simple("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.", func(s *engineSnapshot) float64 { return float64(s.m.prefixHits) })
	if offload {
		simple("vllm:external_prefix_cache_queries_total", "counter", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.", func(s *engineSnapshot) float64 { return float64(s.m.extQueries) })
		simple("vllm:external_prefix_cache_hits_total", "counter", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.", func(s *engineSnapshot) float64 { return float64(s.m.extHits) })
		simple("vllm:cpu_kv_cache_usage_perc", "gauge", "CPU offload KV-cache usage. 1 means 100 percent usage.", func(s *engineSnapshot) float64 { return s.cpuUsage })
		simple("vllm:kv_offload_bytes_gpu_to_cpu_total", "counter", "Bytes of KV cache offloaded from GPU to CPU.", func(s *engineSnapshot) float64 { return float64(s.gpuToCPUB) })
		simple("vllm:kv_offload_bytes_cpu_to_gpu_total", "counter", "Bytes of KV cache loaded from CPU to GPU.", func(s *engineSnapshot) float64 { return float64(s.cpuToGPUB) })
	}
	simple("vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.", func(s *engineSnapshot) float64 { return float64(s.m.preemptions) })
	simple("agentperf_sim:prefix_cache_resets_total", "counter", "Prefix cache resets (POST /reset_prefix_cache or /flush_cache); agentperf simulator only.", func(s *engineSnapshot) float64 { return float64(s.m.cacheResets) })
	simple("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", func(s *engineSnapshot) float64 { return float64(s.m.promptTokens) })
	simple("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", func(s *engineSnapshot) float64 { return float64(s.m.generationTokens) })

	// labelled is sample for a series with a per-value label: with lazy it
	// exists only once used.
	labelled := func(name, lbl string, v float64) {
		if !lazy || v != 0 {
			sample(name, lbl, v)
		}
	}
	family("vllm:prompt_tokens_by_source_total", "counter", "Number of prompt tokens by source.")
	for i := range snaps {
		s := &snaps[i]
		labelled("vllm:prompt_tokens_by_source_total", labels[i]+`,source="local_compute"`, float64(s.m.srcLocalCompute))
		labelled("vllm:prompt_tokens_by_source_total", labels[i]+`,source="local_cache_hit"`, float64(s.m.srcLocalHit))
		labelled("vllm:prompt_tokens_by_source_total", labels[i]+`,source="external_kv_transfer"`, float64(s.m.srcExternal))
	}
	family("vllm:request_success_total", "counter", "Count of successfully processed requests.")
	for i := range snaps {
		for r, name := range finishReasons {
			labelled("vllm:request_success_total", labels[i]+`,finished_reason="`+name+`"`, float64(snaps[i].m.success[r]))
		}
	}
	hist := func(name, help string, get func(*engineSnapshot) *histogram) {
		family(name, "histogram", help)
		for i := range snaps {
			h := get(&snaps[i])
			if lazy && h.count == 0 {
				continue
			}
			var cum uint64
			for b, ub := range h.bounds {
				cum += h.counts[b]
				sample(name+"_bucket", labels[i]+`,le="`+strconv.FormatFloat(ub, 'f', -1, 64)+`"`, float64(cum))
			}
			cum += h.counts[len(h.bounds)]
			sample(name+"_bucket", labels[i]+`,le="+Inf"`, float64(cum))
			sample(name+"_count", labels[i], float64(h.count))
			sample(name+"_sum", labels[i], h.sum)
		}
	}
	hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", func(s *engineSnapshot) *histogram { return &s.m.ttft })
	hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", func(s *engineSnapshot) *histogram { return &s.m.itl })
	hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", func(s *engineSnapshot) *histogram { return &s.m.e2e })
	return bw.Flush()
}

// escapeLabel escapes a Prometheus label value.
func escapeLabel(s string) string {
	needs := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\\' || c == '"' || c == '\n' {
			needs = true
			break
		}
	}
	if !needs {
		return s
	}
	out := make([]byte, 0, len(s)+4)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			out = append(out, `\\`...)
		case '"':
			out = append(out, `\"`...)
		case '\n':
			out = append(out, `\n`...)
		default:
			out = append(out, c)
		}
	}
	return string(out)
}
