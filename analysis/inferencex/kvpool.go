package inferencex

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/agentperf/agentperf/server/engines"
	"github.com/agentperf/agentperf/server/servermetrics"
)

// KVPool is the GPU KV cache capacity of the deployment in tokens and
// where it was read.
type KVPool struct {
	Tokens int64
	// Source names where the figure comes from: "server log",
	// "vllm:cache_config_info" or "sglang:max_total_num_tokens".
	Source string
	// Engines is the number of engines (or DP ranks) summed.
	Engines int
}

// ServerLog is what ParseServerLog found in one inference server log.
type ServerLog struct {
	// VLLM maps an engine (the EngineCore_DPn tag of the line, "" when the
	// line has none) to its last "GPU KV cache size: N tokens".
	VLLM map[string]int64
	// SGLangMaxTotalTokens maps a DP rank tag ("DP0", "" without one) to
	// its last max_total_num_tokens; SGLangDPSize is the dp_size of the
	// server arguments (0 when not logged).
	SGLangMaxTotalTokens map[string]int64
	SGLangDPSize         int
	// LlamaCppCtx is llama.cpp's last "llama_context: n_ctx = N" (its -c:
	// the KV cells of every slot together), 0 when not logged.
	LlamaCppCtx int64
}

var (
	reVLLMKV     = regexp.MustCompile(`GPU KV cache size:\s*([0-9][0-9,_]*)\s*tokens`)
	reVLLMEngine = regexp.MustCompile(`EngineCore_(DP\d+|\d+)`)
	reSGMaxTotal = regexp.MustCompile(`max_total_num_tokens\s*=\s*([0-9]+)`)
	reSGDPSize   = regexp.MustCompile(`\bdp_size\s*=\s*([0-9]+)`)
	reSGRank     = regexp.MustCompile(`\b(DP\d+)\b`)
	reLlamaCtx   = regexp.MustCompile(`llama_context:\s*n_ctx\s*=\s*([0-9]+)`)
)

// maxLogLine bounds one server log line; longer lines are read in part.
const maxLogLine = 1 << 20

// ParseServerLog reads an inference server log for the KV pool size:
// vLLM's "GPU KV cache size: N tokens" lines (thousands separators
// allowed), one per engine, and SGLang's max_total_num_tokens=N and
// dp_size=N. Lines that match nothing are skipped; an error is returned
// only when reading fails.
func ParseServerLog(r io.Reader) (*ServerLog, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	lg := &ServerLog{VLLM: map[string]int64{}, SGLangMaxTotalTokens: map[string]int64{}}
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			lg.scan(line)
		}
		if err == io.EOF {
			return lg, nil
		}
		if err != nil {
			return lg, err
		}
	}
}

// readLine returns the next line without its newline, at most maxLogLine
// bytes of it.
func readLine(br *bufio.Reader) (string, error) {
	var b []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(b) < maxLogLine {
			n := min(len(frag), maxLogLine-len(b))
			b = append(b, frag[:n]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return strings.TrimRight(string(b), "\r\n"), err
	}
}

func (lg *ServerLog) scan(line string) {
	if m := reVLLMKV.FindStringSubmatch(line); m != nil {
		digits := strings.NewReplacer(",", "", "_", "").Replace(m[1])
		if n, err := strconv.ParseInt(digits, 10, 64); err == nil && n > 0 {
			eng := ""
			if e := reVLLMEngine.FindStringSubmatch(line); e != nil {
				eng = e[1]
			}
			lg.VLLM[eng] = n
		}
	}
	if m := reSGMaxTotal.FindStringSubmatch(line); m != nil {
		if n, err := strconv.ParseInt(m[1], 10, 64); err == nil && n > 0 {
			rank := ""
			if r := reSGRank.FindStringSubmatch(line[:strings.Index(line, "max_total_num_tokens")]); r != nil {
				rank = r[1]
			}
			lg.SGLangMaxTotalTokens[rank] = n
		}
	}
	if m := reLlamaCtx.FindStringSubmatch(line); m != nil {
		if n, err := strconv.ParseInt(m[1], 10, 64); err == nil && n > 0 {
			lg.LlamaCppCtx = n
		}
	}
	if m := reSGDPSize.FindStringSubmatch(line); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 && n < 1<<20 {
			lg.SGLangDPSize = n
		}
	}
}

// Pool returns the KV pool the log states: the vLLM sizes summed over
// engines; else SGLang's max_total_num_tokens summed over the DP ranks
// that logged one when all dp_size ranks did, otherwise the largest
// logged value × dp_size (1 when not logged). ok is false when the log
// states neither.
func (lg *ServerLog) Pool() (KVPool, bool) {
	if len(lg.VLLM) > 0 {
		var t int64
		for _, n := range lg.VLLM {
			t = satAdd(t, n)
		}
		return KVPool{Tokens: t, Source: "server log (vLLM GPU KV cache size)", Engines: len(lg.VLLM)}, true
	}
	if len(lg.SGLangMaxTotalTokens) > 0 {
		dp := max(lg.SGLangDPSize, 1)
		ranked := 0
		var sum, top int64
		for rank, n := range lg.SGLangMaxTotalTokens {
			if rank != "" {
				ranked++
			}
			sum = satAdd(sum, n)
			top = max(top, n)
		}
		if ranked >= dp && ranked == len(lg.SGLangMaxTotalTokens) {
			return KVPool{Tokens: sum, Source: "server log (SGLang max_total_num_tokens per DP rank)", Engines: ranked}, true
		}
		return KVPool{Tokens: satMul(top, int64(dp)), Source: fmt.Sprintf("server log (SGLang max_total_num_tokens × dp_size %d)", dp), Engines: dp}, true
	}
	if lg.LlamaCppCtx > 0 {
		return KVPool{Tokens: lg.LlamaCppCtx, Source: "server log (llama.cpp n_ctx)", Engines: 1}, true
	}
	return KVPool{}, false
}

// mergeLogs combines several logs (multi-node workers): their pools add up.
func mergeLogs(logs []*ServerLog) (KVPool, bool) {
	var out KVPool
	found := false
	var srcs []string
	for _, lg := range logs {
		p, ok := lg.Pool()
		if !ok {
			continue
		}
		found = true
		out.Tokens = satAdd(out.Tokens, p.Tokens)
		out.Engines += p.Engines
		srcs = append(srcs, p.Source)
	}
	sort.Strings(srcs)
	srcs = dedupe(srcs)
	out.Source = strings.Join(srcs, " + ")
	return out, found
}

func dedupe(xs []string) []string {
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// poolFromMetrics reads the KV pool from the server metrics:
// vllm:cache_config_info's num_gpu_blocks × block_size labels summed over
// its series (one per engine), else sglang:max_total_num_tokens summed
// over its series.
func poolFromMetrics(ex *servermetrics.Export) (KVPool, bool) {
	if ex == nil {
		return KVPool{}, false
	}
	for _, ms := range []map[string]*servermetrics.Metric{ex.Metrics, ex.WarmupMetrics} {
		if m := ms[vllmEngine.KVPoolMetric[0]]; m != nil {
			var t int64
			n := 0
			for _, s := range m.Series {
				if s == nil {
					continue
				}
				blocks, e1 := strconv.ParseInt(s.Labels["num_gpu_blocks"], 10, 64)
				size, e2 := strconv.ParseInt(s.Labels["block_size"], 10, 64)
				if e1 != nil || e2 != nil || blocks <= 0 || size <= 0 {
					continue
				}
				t = satAdd(t, satMul(blocks, size))
				n++
			}
			if n > 0 {
				return KVPool{Tokens: t, Source: "vllm:cache_config_info (num_gpu_blocks × block_size)", Engines: n}, true
			}
		}
		if g := gauge(ms, sglangEngine.KVPoolMetric, combineSum, nil, "max", "avg"); g.ok && g.v > 0 && g.v < math.MaxInt64/2 {
			n := len(ms[sglangEngine.KVPoolMetric[0]].Series)
			return KVPool{Tokens: int64(math.Round(g.v)), Source: "sglang:max_total_num_tokens", Engines: n}, true
		}
	}
	return KVPool{}, false
}

// kvPoolWhere says where the KV pool size of the detected engine is
// found, when the server metrics did not state it (engines table).
func kvPoolWhere(det engines.Detection) string {
	if e := det.Engine; e != nil {
		return "the server metrics do not state it; for " + e.Title + " it is in " + e.KVPool
	}
	return "no vllm:cache_config_info or sglang:max_total_num_tokens in the server metrics"
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}
