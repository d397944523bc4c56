package dataset

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/agentperf/agentperf/internal/atomicfile"
)

// SynthOptions controls Synthesize. Zero values mean the documented
// defaults.
type SynthOptions struct {
	// Seed makes the corpus: same options ⇒ identical traces.
	Seed int64
	// Traces is the number of traces (default 40). Trace i depends only on
	// Seed and i, so a smaller corpus is a prefix of a larger one.
	Traces int
	// Subagents adds subagent entries (Claude Code Task calls) to about
	// 80 % of the traces; see Synthesize for their model.
	Subagents bool
	// SubagentShare is the share of all requests of the corpus that sit
	// inside subagent entries, when Subagents is set (default
	// DefaultSubagentShare, as on the published with-subagents corpora;
	// values above MaxSubagentShare are lowered to it). It is a target:
	// a corpus of a few hundred traces lands within a few points of it.
	SubagentShare float64
	// MinTurns and MaxTurns bound the parent requests per trace (defaults
	// 30 and 120; drawn log-uniformly).
	MinTurns, MaxTurns int
	// MaxContext, when > 0, keeps every request's in+out at or below it by
	// compacting earlier (for demos against a server with a small window).
	MaxContext int
	// TimeScale multiplies think and API times (default 1: real-corpus
	// magnitudes, e.g. median think time ≈ 10 s; at most
	// MaxSynthTimeScale).
	TimeScale float64
	// Model and SubagentModel are the recorded model names (defaults
	// claude-opus-4-5-20251101 and claude-haiku-4-5-20251001).
	Model, SubagentModel string
}

// MaxSynthTimeScale is the largest SynthOptions.TimeScale: larger ones are
// lowered to it (times must stay finite).
const MaxSynthTimeScale = 1000

func (o SynthOptions) withDefaults() SynthOptions {
	if o.Traces <= 0 {
		o.Traces = 40
	}
	if o.MinTurns <= 0 {
		o.MinTurns = 30
	}
	if o.MaxTurns <= 0 {
		o.MaxTurns = 120
	}
	if o.MaxTurns < o.MinTurns {
		o.MaxTurns = o.MinTurns
	}
	if !(o.TimeScale > 0) { // also NaN
		o.TimeScale = 1
	}
	o.TimeScale = min(o.TimeScale, MaxSynthTimeScale)
	if !(o.SubagentShare > 0) { // also NaN
		o.SubagentShare = DefaultSubagentShare
	}
	o.SubagentShare = min(o.SubagentShare, MaxSubagentShare)
	if o.Model == "" {
		o.Model = "claude-opus-4-5-20251101"
	}
	if o.SubagentModel == "" {
		o.SubagentModel = "claude-haiku-4-5-20251001"
	}
	return o
}

// Synthesize generates a deterministic weka-format corpus whose shape
// resembles the recorded Claude Code corpus (parameters fitted by eye to
// the public kv-cache-tester sample; no recorded data is embedded):
//
//   - a system prefix of tool definitions and system prompt (≈ 10–16k
//     tokens), shared by every request of a trace;
//   - growing prefixes: each turn keeps the previous turn's hash ids (all
//     but the last 0–2 blocks, as re-tokenised tails do) and appends new
//     ones for the previous answer and the new tool result or user text
//     (median ≈ 11 blocks, heavy tail);
//   - compaction: when the context passes a per-trace threshold (median
//     ≈ 160k tokens), the next request falls back to the system prefix plus
//     a summary and grows again; rarely a history rewind to an earlier point;
//   - `in` is the exact token count (usually not a multiple of 64) and
//     hash_ids has in/64 full blocks;
//   - heavy-tailed output lengths (median ≈ 220 tokens), think times (short
//     after tool results, long after user text), API times and TTFTs on
//     streaming rows;
//   - with Subagents, subagent entries modelled on Claude Code Task calls
//     (next paragraph).
//
// Subagents are generated after a trace's parent requests, from a random
// stream of their own: the parent requests (sizes, hash ids, think and API
// times) are those of the same trace without subagents, only moved in time
// (the parent waits for the subagents it spawned). About 80 % of the traces
// spawn subagents; their count follows from SubagentShare and the trace's
// length (about 3 per trace at the default share and turns). They come in
// groups anchored after a parent request that ended in tool_use:
//
//   - a group of 1 child (80 %) or of 2–4 children spawned within a fraction
//     of a second of each other (a multi-child branch); the next parent
//     request starts after every child ended, plus its own think time, and
//     its think_time is the whole gap since the previous parent request
//     ended (as recorded traces have it);
//   - 10 % of the groups are one child launched in the background (status
//     async_launched, duration_ms null): the parent goes on at once and the
//     child's requests overlap the following parent requests;
//   - 12 % of the traces end with a group after their last parent request
//     (nothing follows it), and 3 % start with a child before their first
//     parent request (as when a corpus filter dropped that request);
//   - child types Explore (70 %, on SubagentModel), general-purpose (20 %)
//     and Plan (10 %), both on Model. Children of one type in a trace share
//     a prefix: their tool and system tokens (≈ 8.7k for Explore) plus an
//     environment preamble; the first request adds a short task prompt.
//     general-purpose children also share the leading 50–95 % of the
//     parent's tool-definition blocks; the others share no block with the
//     parent, as recorded Explore subagents do;
//   - a child runs 2–60 requests (median 10), each keeping the previous
//     one's hash ids and adding the tool results read meanwhile (median
//     +2k tokens, heavy tail), with think times of ≈ 3 s, outputs of
//     ≈ 190 tokens and a long final answer (≈ 2k tokens);
//   - 20 % of the children fan out: after its first two requests, 1–4
//     worker chains (each the type's prefix, its own task and its own
//     growing context) run in parallel with the main chain, whose final
//     request waits for them. Their inner requests overlap in time.
//
// Every request start of a trace is a distinct millisecond, so the
// requests of a trace are totally ordered in time.
func Synthesize(opt SynthOptions) []Trace {
	opt = opt.withDefaults()
	out := make([]Trace, opt.Traces)
	for i := range out {
		rng := rand.New(rand.NewPCG(uint64(opt.Seed), 0x9e3779b97f4a7c15^uint64(i)*0xbf58476d1ce4e5b9))
		// subagents draw from a stream of their own, so the parent
		// requests of a trace are the same with and without them
		srng := rand.New(rand.NewPCG(uint64(opt.Seed)^0xd1b54a32d192ed03, 0x94d049bb133111eb^uint64(i)*0x2545f4914f6cdd1d))
		out[i] = synthTrace(rng, srng, opt, i)
	}
	return out
}

// lognormal draws exp(N(ln median, sigma)).
func lognormal(rng *rand.Rand, median, sigma float64) float64 {
	return median * math.Exp(sigma*rng.NormFloat64())
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

type synthState struct {
	rng    *rand.Rand
	opt    SynthOptions
	nextID uint32
}

// idStore lays out the hash ids of one conversation thread in chunks: a
// request that purely extends the previous one shares its storage, as the
// reader does for recorded corpora.
type idStore struct {
	chunk    []uint32 // len: used, cap: capacity (never reallocated)
	start, n int      // the last array is chunk[start:start+n]
}

// next returns the ids of a request: the first keep ids of prev (which
// must be the previous array of this store, or a foreign prefix when the
// store is empty), then fresh ids up to n in total.
func (st *idStore) next(s *synthState, prev []uint32, keep, n int) []uint32 {
	// A tiny context (max-context of a few tokens) leaves no whole block:
	// n and keep can come in at or below zero.
	n = max(n, 0)
	keep = max(0, min(keep, len(prev), n))
	extend := st.n > 0 && keep == st.n && st.start+st.n == len(st.chunk) && cap(st.chunk)-st.start >= n
	if !extend {
		if cap(st.chunk)-len(st.chunk) < n {
			st.chunk = make([]uint32, 0, max(1024, 4*n))
		}
		st.start = len(st.chunk)
		st.chunk = append(st.chunk, prev[:keep]...)
	}
	for len(st.chunk)-st.start < n {
		st.chunk = append(st.chunk, s.nextID)
		s.nextID++
	}
	st.n = n
	return st.chunk[st.start : st.start+n : st.start+n]
}

func synthTrace(rng, srng *rand.Rand, opt SynthOptions, idx int) Trace {
	s := &synthState{rng: rng, opt: opt, nextID: 1}
	t := Trace{
		ID:           fmt.Sprintf("synth_%04d", idx),
		Models:       []string{opt.Model},
		BlockSize:    64,
		HashIDScope:  "local",
		ToolTokens:   clampInt(int(lognormal(rng, 11800, 0.12)), 7000, 17000),
		SystemTokens: clampInt(int(lognormal(rng, 2800, 0.3)), 600, 7000),
	}
	capPrefix(&t.ToolTokens, &t.SystemTokens, opt.MaxContext)
	lo, hi := float64(opt.MinTurns), float64(opt.MaxTurns)
	turns := int(math.Round(math.Exp(math.Log(lo) + rng.Float64()*(math.Log(hi)-math.Log(lo)))))
	sysTokens := t.ToolTokens + t.SystemTokens
	sysBlocks := sysTokens / 64
	threshold := clampF(lognormal(rng, 160000, 0.35), 60000, 900000)
	if opt.MaxContext > 0 {
		threshold = math.Min(threshold, float64(opt.MaxContext)*0.8)
	}
	var ids []uint32
	var store idStore
	in := sysTokens + int(clampF(lognormal(rng, 3000, 1.1), 50, 60000))
	now := 0.0
	prevOut := 0
	for k := 0; k < turns; k++ {
		userTurn := k == 0 || rng.Float64() < 0.13
		var think float64
		if k > 0 {
			// grow: the previous answer plus a tool result or user text
			add := float64(prevOut) + clampF(lognormal(rng, 500, 1.4), 5, 200000)
			if rng.Float64() < 0.02 {
				add *= 8 // a large file read or log dump
			}
			next := in + int(add)
			keepDrop := []int{0, 0, 0, 1, 1, 2}[rng.IntN(6)]
			keep := max(sysBlocks, len(ids)-keepDrop)
			switch {
			case float64(next) > threshold:
				// compaction: back to the system prefix plus a summary
				keep = sysBlocks
				next = sysTokens + int(clampF(lognormal(rng, 6000, 0.5), 1500, 30000))
			case rng.Float64() < 0.01 && len(ids) > sysBlocks+8:
				// history rewind to an earlier point
				keep = sysBlocks + rng.IntN(len(ids)-sysBlocks)
				next = keep*64 + int(clampF(lognormal(rng, 800, 1.0), 10, 20000))
			}
			in = next
			ids = ids[:min(keep, len(ids))]
			if userTurn {
				think = clampF(lognormal(rng, 60, 1.5), 2, 7200) * opt.TimeScale
			} else {
				think = clampF(lognormal(rng, 8, 0.9), 0.5, 900) * opt.TimeScale
			}
			now += think
		}
		if opt.MaxContext > 0 && in >= opt.MaxContext {
			in = opt.MaxContext - 1
		}
		// turn 0: fresh ids (system prefix, then the first user message);
		// later turns: the kept prefix, then fresh ids
		ids = store.next(s, ids, len(ids), in/64)
		outTok := int(clampF(lognormal(rng, 220, 1.1), 1, 16000))
		if opt.MaxContext > 0 && in+outTok > opt.MaxContext {
			outTok = max(1, opt.MaxContext-in)
		}
		ttft := (0.9 + float64(in)/120000 + math.Abs(rng.NormFloat64())*0.4) * opt.TimeScale
		tps := clampF(lognormal(rng, 65, 0.35), 15, 200)
		api := ttft + float64(outTok)/tps*opt.TimeScale
		r := Request{
			T:         round3(now),
			Type:      "n",
			Model:     opt.Model,
			In:        in,
			Out:       outTok,
			HashIDs:   ids,
			Stop:      "tool_use",
			APITime:   round3(api),
			ThinkTime: round3(think),
			TTFT:      math.NaN(),
		}
		if rng.Float64() < 0.18 {
			r.Type = "s"
			r.TTFT = round3(ttft)
		}
		if userTurn {
			r.InputTypes = []string{"text"}
		} else {
			r.InputTypes = []string{"tool_result"}
		}
		last := k == turns-1 || rng.Float64() < 0.06
		switch {
		case last:
			r.Stop = "end_turn"
			r.OutputTypes = []string{"text"}
		case rng.IntN(2) == 0:
			r.OutputTypes = []string{"thinking", "tool_use"}
		default:
			r.OutputTypes = []string{"text", "tool_use"}
		}
		t.Requests = append(t.Requests, r)
		now += api
		prevOut = outTok
	}
	if opt.Subagents {
		s.addSubagents(&t, srng)
	}
	return t
}

func clampF(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }
func clampInt(x, lo, hi int) int       { return max(lo, min(hi, x)) }

// WriteJSONL writes traces in the weka schema, one trace per line, with
// subagent entries interleaved at their After positions. Absent optional
// values (NaN floats, nil lists, a zero BlockSize or empty HashIDScope) are
// omitted, so the output of any trace ReadJSONL returned reads back into
// an equal trace. WriteJSONL does not validate: a trace without an id or
// requests is written as it is and rejected when read.
func WriteJSONL(w io.Writer, traces []Trace) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var buf []byte
	for i := range traces {
		buf = appendTrace(buf[:0], &traces[i])
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("write traces: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write traces: %w", err)
	}
	return nil
}

// CheckJSONLPath checks that path names a file WriteJSONLFile writes and
// the readers take back as a JSONL corpus: .jsonl, .jsonl.zst or
// .jsonl.gz. The error is "PATH: the name must end in …".
func CheckJSONLPath(path string) error {
	base := strings.TrimSuffix(strings.TrimSuffix(path, ".zst"), ".gz")
	if !strings.HasSuffix(base, ".jsonl") {
		return fmt.Errorf("%s: the name must end in .jsonl, .jsonl.zst or .jsonl.gz", path)
	}
	return nil
}

// WriteJSONLFile writes traces as WriteJSONL does to the file path,
// compressed by its extension (.zst: zstd, .gz: gzip, else plain). It
// writes a temporary name and renames it, so that a failed write never
// leaves a truncated corpus behind.
func WriteJSONLFile(path string, traces []Trace) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		var closeEnc func() error
		switch {
		case strings.HasSuffix(path, ".zst"):
			enc, err := zstd.NewWriter(w)
			if err != nil {
				return err
			}
			w, closeEnc = enc, enc.Close
		case strings.HasSuffix(path, ".gz"):
			enc := gzip.NewWriter(w)
			w, closeEnc = enc, enc.Close
		}
		if err := WriteJSONL(w, traces); err != nil {
			return err
		}
		if closeEnc != nil {
			return closeEnc()
		}
		return nil
	})
}

func appendJSONString(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			plain = false
			break
		}
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s) // never fails for a string
	return append(b, q...)
}

func appendStrings(b []byte, key string, ss []string) []byte {
	if ss == nil {
		return b
	}
	b = append(b, ",\""...)
	b = append(b, key...)
	b = append(b, "\":["...)
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

func appendFloat(b []byte, key string, v float64, nullIfNaN bool) []byte {
	if math.IsNaN(v) && !nullIfNaN {
		return b
	}
	b = append(b, ",\""...)
	b = append(b, key...)
	b = append(b, "\":"...)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

func appendInt(b []byte, key string, v int) []byte {
	b = append(b, ",\""...)
	b = append(b, key...)
	b = append(b, "\":"...)
	return strconv.AppendInt(b, int64(v), 10)
}

func appendTrace(b []byte, t *Trace) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, t.ID)
	b = appendStrings(b, "models", t.Models)
	if t.BlockSize != 0 { // 0: omitted, read back as the default 64
		b = appendInt(b, "block_size", t.BlockSize)
	}
	if t.HashIDScope != "" { // "": omitted, read back as "local"
		b = append(b, `,"hash_id_scope":`...)
		b = appendJSONString(b, t.HashIDScope)
	}
	b = appendInt(b, "tool_tokens", t.ToolTokens)
	b = appendInt(b, "system_tokens", t.SystemTokens)
	b = append(b, `,"requests":`...)
	b = appendEntries(b, t.Requests, t.Subagents)
	return append(b, '}')
}

func appendEntries(b []byte, reqs []Request, subs []Subagent) []byte {
	b = append(b, '[')
	first := true
	sep := func() {
		if !first {
			b = append(b, ',')
		}
		first = false
	}
	j := 0
	for i := 0; i <= len(reqs); i++ {
		for ; j < len(subs) && (subs[j].After <= i || i == len(reqs)); j++ {
			sep()
			b = appendSubagent(b, &subs[j])
		}
		if i < len(reqs) {
			sep()
			b = appendRequest(b, &reqs[i])
		}
	}
	return append(b, ']')
}

func appendRequest(b []byte, r *Request) []byte {
	b = append(b, `{"t":`...)
	b = strconv.AppendFloat(b, r.T, 'g', -1, 64)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, r.Type)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, r.Model)
	b = appendInt(b, "in", r.In)
	b = appendInt(b, "out", r.Out)
	b = append(b, `,"hash_ids":[`...)
	for i, id := range r.HashIDs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(id), 10)
	}
	b = append(b, ']')
	b = appendStrings(b, "input_types", r.InputTypes)
	b = appendStrings(b, "output_types", r.OutputTypes)
	b = append(b, `,"stop":`...)
	b = appendJSONString(b, r.Stop)
	b = appendFloat(b, "api_time", r.APITime, false)
	b = appendFloat(b, "ttft", r.TTFT, false)
	b = appendFloat(b, "think_time", r.ThinkTime, false)
	return append(b, '}')
}

func appendSubagent(b []byte, s *Subagent) []byte {
	b = append(b, `{"t":`...)
	b = strconv.AppendFloat(b, s.T, 'g', -1, 64)
	b = append(b, `,"type":"subagent","agent_id":`...)
	b = appendJSONString(b, s.AgentID)
	b = append(b, `,"subagent_type":`...)
	b = appendJSONString(b, s.SubagentType)
	b = appendFloat(b, "duration_ms", s.DurationMs, true)
	b = appendInt(b, "total_tokens", s.TotalTokens)
	b = appendInt(b, "tool_use_count", s.ToolUseCount)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, s.Status)
	b = append(b, `,"requests":`...)
	b = appendEntries(b, s.Requests, s.Subagents)
	b = appendStrings(b, "models", s.Models)
	b = appendInt(b, "tool_tokens", s.ToolTokens)
	b = appendInt(b, "system_tokens", s.SystemTokens)
	return append(b, '}')
}

// capPrefix scales the tool and system prompt sizes down so that, under a
// small MaxContext, the fixed prefix takes at most a quarter of the window
// and every request still has room for its own input.
func capPrefix(tool, system *int, maxContext int) {
	if maxContext <= 0 {
		return
	}
	limit := maxContext / 4
	if sum := *tool + *system; sum > limit && sum > 0 {
		*tool = *tool * limit / sum
		*system = *system * limit / sum
	}
}
