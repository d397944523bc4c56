package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentperf/agentperf/internal/testshared"
)

// discardWriter is a reusable http.ResponseWriter and Flusher that counts
// bytes, so benchmarks measure the handler, not a recorder.
type discardWriter struct {
	h      http.Header
	n      int
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }
func (w *discardWriter) Flush()                      {}

func benchHandler(b *testing.B, body []byte) {
	s, err := New(Config{ZeroLatency: true})
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	w := &discardWriter{h: http.Header{}}
	rd := bytes.NewReader(body)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		rd.Reset(body)
		r.Body = readCloser{rd}
		clear(w.h)
		w.n = 0
		h.ServeHTTP(w, r)
		if w.status != 200 {
			b.Fatalf("status %d", w.status)
		}
	}
	b.ReportMetric(float64(w.n), "resp-bytes/op")
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// BenchmarkHandler measures the zero-latency handler path without the
// network: the small chat body of bench/sim_chat.lua, non-streaming with 8
// tokens and streaming with 40 SSE content events.
func BenchmarkHandler(b *testing.B) {
	small := []msg{{"system", "You are a coding agent."}, {"user", "List the files in the repository and explain the build."}}
	for _, c := range []struct {
		name string
		req  chatReq
	}{
		{"nonstream-8tok", chatReq{Model: "agentperf-sim", Messages: small, MaxCompletionTokens: 8, IgnoreEOS: true}},
		{"stream-40tok", chatReq{Model: "agentperf-sim", Messages: small, MaxCompletionTokens: 40, IgnoreEOS: true, Stream: true}.withUsage()},
		{"stream-40tok-100k-prompt", chatReq{Model: "agentperf-sim", Messages: conversationOfTokens(100_000), MaxCompletionTokens: 40, IgnoreEOS: true, Stream: true}.withUsage()},
	} {
		body, _ := json.Marshal(c.req)
		b.Run(c.name, func(b *testing.B) { benchHandler(b, body) })
	}
}

// conversationOfTokens builds an agentic conversation of roughly n prompt
// tokens (many turns), as a long replay turn sends it.
func conversationOfTokens(n int) []msg {
	m := []msg{{"system", words("system", 2000)}}
	for i := 0; promptLen(m) < n; i++ {
		m = append(m, msg{"user", words(fmt.Sprintf("tool result %d", i), 1500)}, msg{"assistant", words(fmt.Sprintf("step %d", i), 200)})
	}
	return m
}

// BenchmarkLoopback measures one streaming request over a real loopback
// connection (client and server in this process).
func BenchmarkLoopback(b *testing.B) {
	s := startSim(b, Config{ZeroLatency: true})
	body, _ := json.Marshal(chatReq{Messages: []msg{{"user", "hi"}}, MaxCompletionTokens: 40, IgnoreEOS: true, Stream: true}.withUsage())
	c := &http.Client{}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Post(s.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		var sink bytes.Buffer
		sink.ReadFrom(resp.Body)
		resp.Body.Close()
	}
}

func TestRealTokenizerFile(t *testing.T) {
	testshared.SkipIfShort(t, "loads a 7 MB tokenizer")
	path := testshared.Path(t, filepath.Join("tokenizers", "qwen3.tokenizer.json.zst"))
	s := startSim(t, Config{ZeroLatency: true, TokenizerName: path})
	if s.Config().Tokenizer.Approximate() || !strings.Contains(s.Config().Tokenizer.Name(), "qwen3") {
		t.Fatalf("tokenizer = %s", s.Config().Tokenizer.Name())
	}
	msgs := []msg{{"user", "Hello, world! How are you today?"}}
	body := mustDo(t, s, "/v1/chat/completions", chatReq{Messages: msgs, MaxTokens: 1, Stream: true}.withUsage(), nil)
	tok := s.Config().Tokenizer
	want := len(tok.Encode("<|im_start|>user\n")) + len(tok.Encode(msgs[0].Content)) + len(tok.Encode("<|im_end|>\n")) + len(tok.Encode("<|im_start|>assistant\n"))
	if got := parseStream(t, body).usage.PromptTokens; got != want {
		t.Errorf("prompt tokens with qwen3 = %d, want %d", got, want)
	}
}

// BenchmarkEngineStep5000 measures one scheduler step (plan + apply) with
// 5,000 running decoding sequences: the per-step CPU cost that replaces
// per-token timers.
func BenchmarkEngineStep5000(b *testing.B) {
	cfg := DefaultConfig()
	cfg.MaxNumSeqs = 5000
	cfg.MaxNumBatchedTokens = 1 << 30
	cfg.KVCapacityTokens = 5000 * 2048
	e := newEngine(0, &cfg)
	for i := range 5000 {
		ids := make([]uint32, 1000)
		for j := range ids {
			ids[j] = uint32(i*1000 + j)
		}
		e.submit(&seq{promptLen: len(ids), hashes: blockHashes(nil, ids, cfg.BlockSize), maxOut: 1 << 30, notify: make(chan struct{}, 1), chunk: 1})
	}
	now := time.Now()
	e.planLocked()
	e.applyLocked(now) // all prefilled, first tokens out
	if len(e.running) != 5000 {
		b.Fatalf("%d running", len(e.running))
	}
	b.ReportAllocs()
	for b.Loop() {
		e.planLocked()
		e.applyLocked(now)
		for _, s := range e.running {
			select {
			case <-s.notify:
			default:
			}
		}
	}
}

// BenchmarkTimedStreams5000 runs 5,000 concurrent streaming requests of 50
// tokens against the timed engine (one op = all of them) and reports the
// process CPU per op (client and server together): the engine advances all
// sequences per step and wakes each handler once per chunk, so CPU grows
// with events written, not with timers. Not run by go test without -bench
// (5,000 connections; the race detector's goroutine limit is 8,128).
func BenchmarkTimedStreams5000(b *testing.B) {
	const n = 5000
	s := startSim(b, Config{MaxNumSeqs: n, DecodeBaseMs: 5, DecodePerSeqMs: -1, DecodeMsPer1kContext: -1, PrefillTokensPerSec: 1e7, MaxNumBatchedTokens: 1 << 20})
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	body, _ := json.Marshal(chatReq{Messages: []msg{{"user", "scale"}}, MaxTokens: 50, IgnoreEOS: true, Stream: true})
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				resp, err := c.Post(s.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		wg.Wait()
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(n*52*b.N)/b.Elapsed().Seconds(), "events/s")
}
