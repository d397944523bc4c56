// Command fidelity is the in-process driver of bench/run. Subcommands:
//
//	fidelity corpus -kind tiny|fidelity -o FILE
//	    writes a small weka-format corpus: "tiny" has 100–400-token prompts,
//	    40-token outputs and no think time (a pure load generator for the
//	    client-ceiling comparison with wrk; cap them with --synthesis-max-osl);
//	    "fidelity" has prompts of a few hundred to ~2k tokens, 16–32-token
//	    outputs and recorded think times of 0.5–6 s (realistic pacing for
//	    thousands of lanes).
//
//	fidelity run -input FILE -lanes N -duration D [-prefill-tokens-per-sec R] [-max-num-seqs S] [-cpuprofile F] [-dump F]
//	    starts the simulator in-process (with its per-request first-byte
//	    record), replays the corpus with replay.Run at N lanes (streaming),
//	    and prints one markdown row: scheduling lateness (request_start −
//	    credit_issued) p50/p99/max of profiling requests with a scheduled
//	    time, and the TTFT measurement error: the client's first-chunk time
//	    minus the time the simulator wrote (and flushed) the first content
//	    byte of the same X-Request-ID; both also for the phase-start burst
//	    (every lane's first profiling request) on their own.
//
//	fidelity body -input FILE -turn K -tokens N [-stream]
//	    prints the request body agentperf sends for turn K of the corpus's
//	    first trace (the same synthesized messages), so wrk can send a body
//	    of the same size to the same server.
//
//	fidelity records -dir ARTIFACTS [-burst 5ms]
//	    reads an agentperf profile's artifacts and prints
//	    "req/s output-tokens/s lateness-p50 p99 max (ms) n" where lateness
//	    is request_start_ns − credit_issued_ns of profiling requests, the
//	    phase-start burst (credited within -burst of the first profiling
//	    credit) excluded.
//
// It is a benchmark harness, not part of CI.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
	"github.com/agentperf/agentperf/timing"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fidelity corpus|run [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "corpus":
		err = corpusCmd(os.Args[2:])
	case "run":
		err = runCmd(os.Args[2:])
	case "body":
		err = bodyCmd(os.Args[2:])
	case "records":
		err = recordsCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q (corpus or run)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fidelity:", err)
		os.Exit(1)
	}
}

type jsonReq struct {
	T           float64  `json:"t"`
	Type        string   `json:"type"`
	Model       string   `json:"model"`
	In          int      `json:"in"`
	Out         int      `json:"out"`
	HashIDs     []int    `json:"hash_ids"`
	InputTypes  []string `json:"input_types"`
	OutputTypes []string `json:"output_types"`
	Stop        string   `json:"stop"`
	APITime     float64  `json:"api_time"`
	ThinkTime   float64  `json:"think_time"`
}

type jsonTrace struct {
	ID           string    `json:"id"`
	Models       []string  `json:"models"`
	BlockSize    int       `json:"block_size"`
	HashIDScope  string    `json:"hash_id_scope"`
	ToolTokens   int       `json:"tool_tokens"`
	SystemTokens int       `json:"system_tokens"`
	Requests     []jsonReq `json:"requests"`
}

func corpusCmd(args []string) error {
	fs := flag.NewFlagSet("corpus", flag.ContinueOnError)
	kind := fs.String("kind", "tiny", "tiny or fidelity")
	out := fs.String("o", "", "output .jsonl file")
	traces := fs.Int("traces", 64, "number of traces")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("corpus: -o FILE is required")
	}
	rng := rand.New(rand.NewPCG(7, 7))
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for t := range *traces {
		tr := jsonTrace{ID: fmt.Sprintf("%s_%04d", *kind, t), Models: []string{"m"}, BlockSize: 64, HashIDScope: "local"}
		turns, clock := 40, 0.0
		for i := range turns {
			r := jsonReq{Type: "n", Model: "m", InputTypes: []string{"text"}, OutputTypes: []string{"text"}, Stop: "end_turn"}
			switch *kind {
			case "tiny":
				// One 64-token block for the first eight turns, growing by a
				// block every eight turns: 100–400 tokens.
				n := 1 + i/8
				r.In, r.Out, r.APITime = 64*(n-1)+100, 40, 0.001
			case "fidelity":
				n := 4 + i*3/4 // 256 … ~2k tokens
				r.In, r.Out = 64*n+40, 16+rng.IntN(17)
				r.APITime = 0.5
				if i > 0 {
					r.ThinkTime = 0.5 + 5.5*rng.Float64()
				}
			default:
				return fmt.Errorf("corpus: -kind %q: want tiny or fidelity", *kind)
			}
			for h := range (r.In - 40) / 64 {
				r.HashIDs = append(r.HashIDs, h+1)
			}
			if len(r.HashIDs) == 0 {
				r.HashIDs = []int{1}
			}
			r.T = clock
			clock += r.ThinkTime + r.APITime
			tr.Requests = append(tr.Requests, r)
		}
		if err := enc.Encode(tr); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// sample is what the driver keeps of one record.
type sample struct {
	reqID                     string
	phase                     metrics.Phase
	credit, start, firstChunk int64
	failed, cancelled         bool
}

type sink struct {
	mu sync.Mutex
	s  []sample
}

func (k *sink) Add(r *metrics.Record) {
	k.mu.Lock()
	k.s = append(k.s, sample{reqID: r.XRequestID, phase: r.Phase, credit: r.CreditIssuedNs,
		start: r.RequestStartNs, firstChunk: r.FirstChunkNs, failed: r.Error != nil, cancelled: r.Cancelled})
	k.mu.Unlock()
}

func runCmd(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	input := fs.String("input", "", "corpus file (from fidelity corpus -kind fidelity)")
	lanes := fs.Int("lanes", 1000, "lanes")
	dur := fs.Duration("duration", 15*time.Second, "profiling duration")
	prefill := fs.Float64("prefill-tokens-per-sec", 2e6, "simulator prefill rate (tokens/s)")
	maxSeqs := fs.Int("max-num-seqs", 1024, "simulator running sequences")
	dump := fs.String("dump", "", "write every profiling sample (credit ms after profiling start, lateness ms, TTFT error ms) as CSV here")
	burst := fs.Duration("burst", 5*time.Millisecond, "requests credited within this time after profiling start count as the phase-start burst")
	cpuprof := fs.String("cpuprofile", "", "write a CPU profile of the whole run (client and simulator) here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *input == "" {
		return fmt.Errorf("run: -input FILE is required")
	}
	traces, _, err := dataset.ReadPath(*input, dataset.ReadOptions{})
	if err != nil {
		return err
	}
	tok := tokenizer.Builtin()
	cfg := sim.DefaultConfig()
	cfg.Model = "agentperf-sim"
	cfg.RecordFirstByte = true
	cfg.PrefillTokensPerSec = *prefill
	cfg.MaxNumSeqs = *maxSeqs
	cfg.Tokenizer = tok
	srv, err := sim.New(cfg)
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	defer srv.Close()

	k := &sink{}
	out, err := os.MkdirTemp("", "fidelity")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	s := run.NewSpec()
	s.Corpus.Traces, s.Tokenizer.Given, s.OutputDir = traces, tok, out
	s.ServerMetrics.Off, s.NoPlot = true, true // nothing beside the replay shares the cores
	rc := &s.Replay
	rc.Generation = timing.V02 // the recorded think times, capped per turn
	rc.URL = srv.URL
	rc.Models = []string{"agentperf-sim"}
	rc.Concurrency = *lanes
	rc.BenchmarkDuration = *dur
	rc.GracePeriod = 10 * time.Second
	rc.Streaming = true
	rc.IgnoreEOS = true
	rc.UseServerTokenCount = true
	rc.LiveAssistant = false
	rc.Sink = k // every record, besides the run's own artifacts
	o, err := run.Run(context.Background(), s)
	if err != nil {
		return err
	}
	res := o.Result
	p0 := res.ProfilingStart.UnixNano()
	var dw *bufio.Writer
	if *dump != "" {
		f, err := os.Create(*dump)
		if err != nil {
			return err
		}
		defer f.Close()
		dw = bufio.NewWriter(f)
		defer dw.Flush()
	}
	var late, burstLate, ttftErr, burstTTFTErr []float64
	missing, failed, cancelled := 0, 0, 0
	for _, s := range k.s {
		if s.cancelled {
			cancelled++
			continue
		}
		if s.failed {
			failed++
			continue
		}
		if s.phase != metrics.PhaseProfiling {
			continue
		}
		l := float64(s.start-s.credit) / 1e6
		inBurst := s.credit-p0 < int64(*burst)
		if inBurst {
			burstLate = append(burstLate, l)
		} else {
			late = append(late, l)
		}
		if s.firstChunk == 0 {
			continue
		}
		fb, ok := srv.FirstByte(s.reqID)
		if !ok {
			missing++
			continue
		}
		if e := float64(s.firstChunk-fb.UnixNano()) / 1e6; inBurst {
			burstTTFTErr = append(burstTTFTErr, e)
		} else {
			ttftErr = append(ttftErr, e)
		}
		if dw != nil {
			fmt.Fprintf(dw, "%.3f,%.3f,%.3f\n", float64(s.credit-p0)/1e6, l, float64(s.firstChunk-fb.UnixNano())/1e6)
		}
	}
	if len(late) == 0 {
		fmt.Fprintf(os.Stderr, "fidelity: no scheduled profiling requests at %d lanes in %s (accounting %+v); lengthen -duration\n", *lanes, *dur, res.Accounting)
	}
	q := func(v []float64) string {
		if len(v) == 0 {
			return "–"
		}
		slices.Sort(v)
		at := func(p float64) float64 { return v[min(len(v)-1, int(p*float64(len(v))))] }
		return fmt.Sprintf("%.3f / %.3f / %.3f", at(0.5), at(0.99), v[len(v)-1])
	}
	note := ""
	if missing > 0 || failed > 0 {
		note = fmt.Sprintf(" (%d failed, %d without a sim record)", failed, missing)
	}
	fmt.Printf("| %d | %d | %d | %s | %s | %s | %s | %d |%s\n", *lanes, len(late)+len(burstLate), len(late), q(late), q(burstLate),
		q(ttftErr), q(burstTTFTErr), cancelled, note)
	return nil
}

func bodyCmd(args []string) error {
	fs := flag.NewFlagSet("body", flag.ContinueOnError)
	input := fs.String("input", "", "corpus file")
	turn := fs.Int("turn", 20, "turn of the first trace")
	tokens := fs.Int("tokens", 8, "max_completion_tokens")
	stream := fs.Bool("stream", false, "streaming request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	traces, _, err := dataset.ReadPath(*input, dataset.ReadOptions{})
	if err != nil {
		return err
	}
	syn, err := prompttext.New(tokenizer.Builtin(), prompttext.Options{})
	if err != nil {
		return err
	}
	conv, err := syn.Conversation(&traces[0])
	if err != nil {
		return err
	}
	b := []byte(`{"model":"agentperf-sim","messages":`)
	if b, err = conv.AppendMessagesJSON(b, *turn, ""); err != nil {
		return err
	}
	if *stream {
		b = append(b, `,"stream":true,"stream_options":{"include_usage":true}`...)
	} else {
		b = append(b, `,"stream":false`...)
	}
	b = fmt.Appendf(b, `,"max_completion_tokens":%d,"ignore_eos":true}`, *tokens)
	_, err = os.Stdout.Write(b)
	return err
}

func recordsCmd(args []string) error {
	fs := flag.NewFlagSet("records", flag.ContinueOnError)
	dir := fs.String("dir", "", "artifact directory of agentperf profile")
	burst := fs.Duration("burst", 5*time.Millisecond, "phase-start burst window")
	if err := fs.Parse(args); err != nil {
		return err
	}
	agg, err := metrics.ReadAggregateFile(*dir)
	if err != nil {
		return err
	}
	avg := func(tag string) float64 {
		st, _ := agg.Stat(tag)
		f, _ := st.Avg.Float()
		return f
	}
	f, err := os.Open(*dir + "/" + metrics.FileRecords)
	if err != nil {
		return err
	}
	defer f.Close()
	type meta struct{ Credit, Start int64 }
	var ms []meta
	p0 := int64(0)
	if _, err := metrics.ReadRecords(f, f.Name(), false, func(l *metrics.RecordLine) error {
		if l.Record.Phase != metrics.PhaseProfiling {
			return nil
		}
		m := meta{l.Record.CreditIssuedNs, l.Record.RequestStartNs}
		if p0 == 0 || m.Credit < p0 {
			p0 = m.Credit
		}
		ms = append(ms, m)
		return nil
	}); err != nil {
		return err
	}
	var late []float64
	for _, m := range ms {
		if m.Credit-p0 >= int64(*burst) {
			late = append(late, float64(m.Start-m.Credit)/1e6)
		}
	}
	slices.Sort(late)
	p50, p99, mx := 0.0, 0.0, 0.0
	if n := len(late); n > 0 {
		p50, p99, mx = late[n/2], late[min(n-1, n*99/100)], late[n-1]
	}
	fmt.Printf("%.0f %.0f %.3f %.3f %.3f %d\n", avg("request_throughput"), avg("output_token_throughput"), p50, p99, mx, len(late))
	return nil
}
