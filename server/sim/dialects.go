package sim

import (
	"bufio"
	"io"
	"strconv"
)

// MetricsDialects returns the accepted values of Config.MetricsDialect:
// vllm (the default), sglang, llamacpp, and tgi, an engine agentperf's
// engines table does not know (docs/engines.md).
func MetricsDialects() []string { return []string{"llamacpp", "sglang", "tgi", "vllm"} }

// promWriter writes Prometheus text families.
type promWriter struct{ bw *bufio.Writer }

func (p promWriter) family(name, typ, help string) {
	p.bw.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
}

func (p promWriter) sample(name, labels string, v float64) {
	p.bw.WriteString(name)
	if labels != "" {
		p.bw.WriteString("{" + labels + "}")
	}
	p.bw.WriteByte(' ')
	p.bw.Write(strconv.AppendFloat(nil, v, 'g', -1, 64))
	p.bw.WriteByte('\n')
}

// sumEngines adds a figure over the engines.
func sumEngines(snaps []engineSnapshot, get func(*engineSnapshot) float64) float64 {
	var t float64
	for i := range snaps {
		t += get(&snaps[i])
	}
	return t
}

// writeLlamaCppMetrics writes /metrics as llama-server --metrics does
// (tools/server's to_metrics): one server, no labels, 10 counters and 5
// gauges under llamacpp:. Its prompt counter leaves out the tokens read
// from the cache, which prompt_tokens_cached counts; it exports no KV
// usage. The simulator's engines are summed into the one server; the
// timing counters and speculative-decoding ones are 0.
func writeLlamaCppMetrics(w io.Writer, snaps []engineSnapshot) error {
	p := promWriter{bufio.NewWriterSize(w, 4<<10)}
	one := func(name, typ, help string, v float64) {
		p.family("llamacpp:"+name, typ, help)
		p.sample("llamacpp:"+name, "", v)
	}
	prompt := sumEngines(snaps, func(s *engineSnapshot) float64 { return float64(s.m.promptTokens) })
	cached := sumEngines(snaps, func(s *engineSnapshot) float64 { return float64(s.m.prefixHits) })
	one("prompt_tokens_total", "counter", "Number of prompt tokens processed, excluding cached tokens", prompt-cached)
	one("prompt_tokens_cached_total", "counter", "Number of prompt tokens reused from the cache", cached)
	one("prompt_seconds_total", "counter", "Total time spent processing prompts", 0)
	one("tokens_predicted_total", "counter", "Number of generation tokens processed", sumEngines(snaps, func(s *engineSnapshot) float64 { return float64(s.m.generationTokens) }))
	one("tokens_predicted_seconds_total", "counter", "Total time spent generating tokens", 0)
	one("n_decode_total", "counter", "Total number of llama_decode() calls, excluding speculative decoding and multimodal decoding", 0)
	one("n_tokens_max", "counter", "Largest observed sequence length (prompt + generation)", 0)
	one("spec_decode_num_draft_tokens_total", "counter", "Speculative: Total draft tokens generated", 0)
	one("spec_decode_num_accepted_tokens_total", "counter", "Speculative: Total draft tokens accepted by the target model", 0)
	one("spec_decode_num_drafts_total", "counter", "Speculative: Total speculative decoding verification steps", 0)
	one("prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s", 0)
	one("predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s", 0)
	one("requests_processing", "gauge", "Number of requests processing", sumEngines(snaps, func(s *engineSnapshot) float64 { return float64(s.running) }))
	one("requests_deferred", "gauge", "Number of requests deferred", sumEngines(snaps, func(s *engineSnapshot) float64 { return float64(s.waiting) }))
	one("n_busy_slots_per_decode", "gauge", "Average number of busy slots per llama_decode() call", 0)
	return p.bw.Flush()
}

// writeSGLangMetrics writes SGLang's names: one series per engine
// (dp_rank), cached tokens by cache_source (device: the GPU prefix cache,
// host: the offload tier), the KV pool in max_total_num_tokens.
func writeSGLangMetrics(w io.Writer, model string, blockSize int, snaps []engineSnapshot) error {
	p := promWriter{bufio.NewWriterSize(w, 8<<10)}
	lbl := func(i int) string {
		return `model_name="` + escapeLabel(model) + `",dp_rank="` + strconv.Itoa(i) + `"`
	}
	each := func(name, typ, help string, get func(*engineSnapshot) float64) {
		p.family(name, typ, help)
		for i := range snaps {
			p.sample(name, lbl(i), get(&snaps[i]))
		}
	}
	each("sglang:num_running_reqs", "gauge", "The number of running requests.", func(s *engineSnapshot) float64 { return float64(s.running) })
	each("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.", func(s *engineSnapshot) float64 { return float64(s.waiting) })
	each("sglang:token_usage", "gauge", "The token usage.", func(s *engineSnapshot) float64 { return s.kvUsage })
	each("sglang:max_total_num_tokens", "gauge", "Maximum total number of tokens in the KV cache pool.", func(s *engineSnapshot) float64 { return float64(s.gpuBlocks * blockSize) })
	each("sglang:prompt_tokens_total", "counter", "Number of prefill tokens processed.", func(s *engineSnapshot) float64 { return float64(s.m.promptTokens) })
	each("sglang:generation_tokens_total", "counter", "Number of generation tokens processed.", func(s *engineSnapshot) float64 { return float64(s.m.generationTokens) })
	each("sglang:num_retracted_reqs_total", "counter", "The number of retracted requests.", func(s *engineSnapshot) float64 { return float64(s.m.preemptions) })
	p.family("sglang:cached_tokens_total", "counter", "Number of cached prompt tokens.")
	for i := range snaps {
		p.sample("sglang:cached_tokens_total", lbl(i)+`,cache_source="device"`, float64(snaps[i].m.prefixHits))
		p.sample("sglang:cached_tokens_total", lbl(i)+`,cache_source="host"`, float64(snaps[i].m.extHits))
	}
	return p.bw.Flush()
}

// writeTGIMetrics writes a few of Text Generation Inference's names, an
// engine agentperf does not know: the scrapes succeed, the families are
// stored, no figure is derived.
func writeTGIMetrics(w io.Writer, snaps []engineSnapshot) error {
	p := promWriter{bufio.NewWriterSize(w, 2<<10)}
	p.family("tgi_queue_size", "gauge", "Current queue size")
	p.sample("tgi_queue_size", "", sumEngines(snaps, func(s *engineSnapshot) float64 { return float64(s.waiting) }))
	p.family("tgi_batch_current_size", "gauge", "Current batch size")
	p.sample("tgi_batch_current_size", "", sumEngines(snaps, func(s *engineSnapshot) float64 { return float64(s.running) }))
	p.family("tgi_request_generated_tokens_total", "counter", "Generated tokens")
	p.sample("tgi_request_generated_tokens_total", "", sumEngines(snaps, func(s *engineSnapshot) float64 { return float64(s.m.generationTokens) }))
	return p.bw.Flush()
}
