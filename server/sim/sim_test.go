package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStreamFormat(t *testing.T) {
	t.Parallel()
	for _, zl := range []bool{true, false} {
		t.Run(fmt.Sprintf("zero-latency=%v", zl), func(t *testing.T) {
			t.Parallel()
			cfg := fastTimed()
			cfg.ZeroLatency = zl
			s := startSim(t, cfg)
			msgs := []msg{{"system", "You are a coding agent."}, {"user", "Fix the build."}}
			body := mustDo(t, s, "/v1/chat/completions", chatReq{Model: "agentperf-sim", Messages: msgs, MaxCompletionTokens: 7, IgnoreEOS: true, Stream: true}.withUsage(),
				map[string]string{"X-Request-ID": "req-1"})
			data := sseData(t, body)
			resp, _, err := do(t, s, "/v1/chat/completions", chatReq{Messages: msgs, MaxTokens: 1, Stream: true}, nil)
			if err != nil || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" || resp.ContentLength != -1 ||
				resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
				t.Errorf("stream response framing: %v, TE %v, CL %d, CT %q; want chunked SSE", err, resp.TransferEncoding, resp.ContentLength, resp.Header.Get("Content-Type"))
			}
			// role chunk, 7 content chunks, usage chunk, [DONE]
			if len(data) != 10 {
				t.Fatalf("got %d events, want 10:\n%s", len(data), body)
			}
			if data[9] != "[DONE]" {
				t.Errorf("last event = %q, want [DONE]", data[9])
			}
			r := parseStream(t, body)
			first := r.chunks[0]
			if first.ID != "chatcmpl-req-1" || first.Object != "chat.completion.chunk" || first.Model != "agentperf-sim" {
				t.Errorf("first chunk id/object/model = %q/%q/%q", first.ID, first.Object, first.Model)
			}
			if d := first.Choices[0].Delta; d.Role == nil || *d.Role != "assistant" || d.Content == nil || *d.Content != "" {
				t.Errorf("first chunk delta = %+v, want role assistant and empty content", d)
			}
			if len(r.content) != 7 {
				t.Errorf("content chunks = %d, want 7 (one token each)", len(r.content))
			}
			for i, c := range r.chunks[1:8] {
				fr := c.Choices[0].FinishReason
				if i < 6 && fr != nil {
					t.Errorf("chunk %d has finish_reason %q before the end", i+1, *fr)
				}
			}
			if r.finish != "length" {
				t.Errorf("finish_reason = %q, want length (ignore_eos)", r.finish)
			}
			u := r.chunks[8]
			if len(u.Choices) != 0 || u.Usage == nil {
				t.Fatalf("usage chunk = %s", data[8])
			}
			wantP := promptLen(msgs)
			if u.Usage.PromptTokens != wantP || u.Usage.CompletionTokens != 7 || u.Usage.TotalTokens != wantP+7 {
				t.Errorf("usage = %+v, want prompt %d, completion 7, total %d", *u.Usage, wantP, wantP+7)
			}
			if u.Usage.PromptTokensDetails == nil || u.Usage.PromptTokensDetails.CachedTokens != 0 {
				t.Errorf("cached tokens on a cold cache = %+v, want 0", u.Usage.PromptTokensDetails)
			}
		})
	}
}

func TestTokensPerChunkAndNoUsageByDefault(t *testing.T) {
	t.Parallel()
	for _, zl := range []bool{true, false} {
		cfg := fastTimed()
		cfg.ZeroLatency = zl
		cfg.TokensPerChunk = 4
		s := startSim(t, cfg)
		body := mustDo(t, s, "/v1/chat/completions", chatReq{Messages: []msg{{"user", "hi"}}, MaxTokens: 10, IgnoreEOS: true, Stream: true}, nil)
		r := parseStream(t, body)
		if got := len(r.content); got != 3 { // 4 + 4 + 2
			t.Errorf("zl=%v: content chunks = %d, want 3", zl, got)
		}
		if n := len(strings.Fields(strings.Join(r.content, ""))); n != 10 {
			t.Errorf("zl=%v: words = %d, want 10 (one per token)", zl, n)
		}
		if r.usage != nil {
			t.Errorf("zl=%v: usage sent without stream_options.include_usage", zl)
		}
		if !r.done {
			t.Errorf("zl=%v: no [DONE]", zl)
		}
	}
}

func TestNonStreamingAndCompletions(t *testing.T) {
	t.Parallel()
	for _, zl := range []bool{true, false} {
		cfg := fastTimed()
		cfg.ZeroLatency = zl
		s := startSim(t, cfg)
		body := mustDo(t, s, "/v1/chat/completions", chatReq{Messages: []msg{{"user", "hello"}}, MaxCompletionTokens: 5, IgnoreEOS: true}, nil)
		var resp struct {
			Object  string `json:"object"`
			Choices []struct {
				Message struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage usage `json:"usage"`
		}
		if err := json.Unmarshal(body, &resp); err != nil {
			t.Fatalf("chat JSON: %v: %s", err, body)
		}
		if resp.Object != "chat.completion" || resp.Choices[0].Message.Role != "assistant" ||
			len(strings.Fields(resp.Choices[0].Message.Content)) != 5 || resp.Choices[0].FinishReason != "length" {
			t.Errorf("zl=%v: chat response = %s", zl, body)
		}
		if resp.Usage.CompletionTokens != 5 || resp.Usage.PromptTokens != promptLen([]msg{{"user", "hello"}}) {
			t.Errorf("zl=%v: usage = %+v", zl, resp.Usage)
		}

		// /v1/completions streaming: text chunks, usage, [DONE].
		body = mustDo(t, s, "/v1/completions", chatReq{Prompt: "def main():", MaxTokens: 3, IgnoreEOS: true, Stream: true}.withUsage(), nil)
		r := parseStream(t, body)
		if len(r.content) != 3 || r.usage == nil || r.usage.CompletionTokens != 3 || !r.done || r.chunks[0].Object != "text_completion" {
			t.Errorf("zl=%v: completions stream = %s", zl, body)
		}
	}
}

func TestEOSWithoutIgnoreEOS(t *testing.T) {
	t.Parallel()
	s := startSim(t, Config{ZeroLatency: true, Seed: 7})
	lengths := map[int]bool{}
	for i := range 20 {
		m := []msg{{"user", words(fmt.Sprintf("q%d", i), 30)}}
		get := func() (int, string) {
			body := mustDo(t, s, "/v1/chat/completions", chatReq{Messages: m, MaxTokens: 50, Stream: true}.withUsage(), nil)
			r := parseStream(t, body)
			return r.usage.CompletionTokens, r.finish
		}
		n, fr := get()
		if n < 1 || n > 50 {
			t.Fatalf("completion tokens %d outside 1..50", n)
		}
		if want := map[bool]string{true: "length", false: "stop"}[n == 50]; fr != want {
			t.Errorf("finish_reason %q for %d of 50 tokens, want %q", fr, n, want)
		}
		if n2, _ := get(); n2 != n {
			t.Errorf("same prompt and seed gave %d then %d tokens", n, n2)
		}
		lengths[n] = true
	}
	if len(lengths) < 5 {
		t.Errorf("only %d distinct lengths over 20 prompts; want random lengths", len(lengths))
	}
}

func TestReasoningRatio(t *testing.T) {
	t.Parallel()
	s := startSim(t, Config{ZeroLatency: true, ReasoningRatio: 0.25})
	body := mustDo(t, s, "/v1/chat/completions", chatReq{Messages: []msg{{"user", "think"}}, MaxTokens: 8, IgnoreEOS: true, Stream: true}.withUsage(), nil)
	r := parseStream(t, body)
	if len(r.reasoning) != 2 || len(r.content) != 6 {
		t.Fatalf("reasoning/content chunks = %d/%d, want 2/6", len(r.reasoning), len(r.content))
	}
	// reasoning comes first
	seenContent := false
	for _, c := range r.chunks {
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil && *ch.Delta.Content != "" {
				seenContent = true
			}
			if ch.Delta.ReasoningContent != nil && seenContent {
				t.Fatal("reasoning_content after content")
			}
		}
	}
	if r.usage.CompletionTokens != 8 || r.usage.CompletionTokensDetails == nil || r.usage.CompletionTokensDetails.ReasoningTokens != 2 {
		t.Errorf("usage = %+v", r.usage)
	}
}

func TestModelsHealthAndErrors(t *testing.T) {
	t.Parallel()
	s := startSim(t, Config{ZeroLatency: true, Model: "org/model-x"})
	resp, err := http.Get(s.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if len(models.Data) != 1 || models.Data[0].ID != "org/model-x" || models.Data[0].MaxModelLen != 131072 {
		t.Errorf("/v1/models = %+v", models)
	}
	resp, err = http.Get(s.URL + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/health: %v %v", resp, err)
	}
	resp.Body.Close()

	r, body, err := do(t, s, "/v1/chat/completions", chatReq{Model: "other", Messages: []msg{{"user", "x"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.StatusCode != 404 || string(body) != `{"error":{"message":"The model `+"`other`"+` does not exist.","type":"NotFoundError","param":"model","code":404}}` {
		t.Errorf("unknown model: %d %s", r.StatusCode, body)
	}
	for _, bad := range []any{
		map[string]any{"messages": "nope"},
		map[string]any{"messages": []any{}},
		map[string]any{"messages": []msg{{"user", "x"}}, "max_tokens": 0},
	} {
		r, body, err := do(t, s, "/v1/chat/completions", bad, nil)
		if err != nil || r.StatusCode != 400 || !strings.Contains(string(body), `"type":"BadRequestError"`) {
			t.Errorf("bad request %v: %v %s", bad, r.StatusCode, body)
		}
	}
	st := s.Stats()
	if st.NotFound != 1 || st.BadRequests != 3 {
		t.Errorf("stats: not found %d, bad requests %d; want 1, 3", st.NotFound, st.BadRequests)
	}
}

// conversation returns the messages of turn k (0-based) of a conversation
// whose system prompt starts with tag.
func conversation(tag string, k int) []msg {
	m := []msg{{"system", words(tag, 200)}, {"user", words("task "+tag, 40)}}
	for i := 1; i <= k; i++ {
		m = append(m, msg{"assistant", words(fmt.Sprintf("answer %d", i), 30)}, msg{"user", words(fmt.Sprintf("tool output %d", i), 60)})
	}
	return m
}

func cachedOf(t testing.TB, s *Server, msgs []msg, hdr map[string]string) (prompt, cached int) {
	t.Helper()
	body := mustDo(t, s, "/v1/chat/completions", chatReq{Messages: msgs, MaxTokens: 2, IgnoreEOS: true, Stream: true}.withUsage(), hdr)
	r := parseStream(t, body)
	if r.usage == nil || r.usage.PromptTokensDetails == nil {
		t.Fatalf("no usage with cached tokens: %s", body)
	}
	return r.usage.PromptTokens, r.usage.PromptTokensDetails.CachedTokens
}

func TestPrefixCacheAcrossTurns(t *testing.T) {
	t.Parallel()
	for _, zl := range []bool{true, false} {
		t.Run(fmt.Sprintf("zero-latency=%v", zl), func(t *testing.T) {
			t.Parallel()
			cfg := fastTimed()
			cfg.ZeroLatency = zl
			s := startSim(t, cfg)
			prevP, prevCached := 0, -1
			for k := range 4 {
				p, c := cachedOf(t, s, conversation("alpha", k), nil)
				if k == 0 && c != 0 {
					t.Errorf("turn 0: cached %d on a cold cache", c)
				}
				if k > 0 {
					// Turn k's prompt extends turn k-1's: every full block of
					// the previous prompt is a hit.
					if want := prevP / 16 * 16; c != want {
						t.Errorf("turn %d: cached %d, want %d (full blocks of the previous %d-token prompt)", k, c, want, prevP)
					}
					if c <= prevCached {
						t.Errorf("turn %d: cached %d did not grow from %d", k, c, prevCached)
					}
				}
				prevP, prevCached = p, c
			}
			// Another conversation shares nothing.
			if _, c := cachedOf(t, s, conversation("omega", 0), nil); c != 0 {
				t.Errorf("other conversation: cached %d, want 0", c)
			}
			// Repeating a prompt exactly hits all but the last block (one
			// token is always computed).
			p, c := cachedOf(t, s, conversation("omega", 0), nil)
			if want := (p - 1) / 16 * 16; c != want {
				t.Errorf("repeat: cached %d of %d, want %d", c, p, want)
			}
		})
	}
}

func TestEvictionAndOffload(t *testing.T) {
	t.Parallel()
	base := Config{ZeroLatency: true, MaxModelLen: 1024, KVCapacityTokens: 1024 + 64}
	conv := func(tag string) []msg { return []msg{{"system", words(tag, 300)}} }

	// Big cache: A, B, C, then A again hits fully.
	big := base
	big.KVCapacityTokens = 100000
	s := startSim(t, big)
	pa, _ := cachedOf(t, s, conv("A"), nil)
	if pa < 400 || pa > 900 {
		t.Fatalf("prompt A has %d tokens; the test needs 400..900", pa)
	}
	cachedOf(t, s, conv("B"), nil)
	cachedOf(t, s, conv("C"), nil)
	if _, c := cachedOf(t, s, conv("A"), nil); c != (pa-1)/16*16 {
		t.Errorf("big cache: A again cached %d, want %d", c, (pa-1)/16*16)
	}
	if ev := s.Stats().Evictions; ev != 0 {
		t.Errorf("big cache: %d evictions", ev)
	}

	// Small cache: B and C evict A's blocks.
	s = startSim(t, base)
	cachedOf(t, s, conv("A"), nil)
	cachedOf(t, s, conv("B"), nil)
	cachedOf(t, s, conv("C"), nil)
	_, c := cachedOf(t, s, conv("A"), nil)
	st := s.Stats()
	if st.Evictions == 0 {
		t.Fatalf("small cache: no evictions")
	}
	if c >= (pa-1)/16*16 {
		t.Errorf("small cache: A again cached %d, want fewer than %d after evictions", c, (pa-1)/16*16)
	}
	if st.ExternalHits != 0 || st.ExternalQueries != 0 {
		t.Errorf("no offload tier, but external queries/hits %d/%d", st.ExternalQueries, st.ExternalHits)
	}

	// Small cache with an offload tier: evicted blocks come back as
	// external hits, so A again is fully cached.
	off := base
	off.OffloadCapacityTokens = 8192
	s = startSim(t, off)
	cachedOf(t, s, conv("A"), nil)
	cachedOf(t, s, conv("B"), nil)
	cachedOf(t, s, conv("C"), nil)
	before := s.Stats()
	_, c = cachedOf(t, s, conv("A"), nil)
	after := s.Stats()
	if c != (pa-1)/16*16 {
		t.Errorf("offload: A again cached %d, want %d", c, (pa-1)/16*16)
	}
	gpuHit := after.PrefixHits - before.PrefixHits
	extHit := after.ExternalHits - before.ExternalHits
	if extHit == 0 || gpuHit+extHit != int64(c) {
		t.Errorf("offload: GPU hits %d + external hits %d, want > 0 external and a sum of %d", gpuHit, extHit, c)
	}
	if q := after.ExternalQueries - before.ExternalQueries; q != int64(pa)-gpuHit {
		t.Errorf("offload: external queries %d, want prompt %d - GPU hits %d", q, pa, gpuHit)
	}
}

func TestPreemptionAndQueue(t *testing.T) {
	t.Parallel()
	cfg := fastTimed()
	cfg.MaxModelLen = 256
	cfg.KVCapacityTokens = 512 // 32 blocks: three running sequences of 14 blocks do not fit
	cfg.MaxNumSeqs = 3
	s := startSim(t, cfg)
	var wg sync.WaitGroup
	results := make([]streamResult, 5)
	bodies := make([][]byte, 5)
	for i := range results {
		wg.Go(func() {
			resp, body, err := do(t, s, "/v1/chat/completions", chatReq{Messages: []msg{{"user", words(fmt.Sprintf("req%d", i), 30)}}, MaxTokens: 150, IgnoreEOS: true, Stream: true}.withUsage(), nil)
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("request %d: %v %s", i, err, body)
				return
			}
			bodies[i] = body
		})
	}
	wg.Wait()
	for i, b := range bodies {
		if b != nil {
			results[i] = parseStream(t, b)
		}
	}
	for i, r := range results {
		if r.usage == nil || r.usage.CompletionTokens != 150 || len(r.content) != 150 {
			t.Errorf("request %d: %d content chunks, usage %+v; want 150", i, len(r.content), r.usage)
		}
	}
	st := s.Stats()
	if st.Preemptions == 0 {
		t.Errorf("no preemptions with 3 running × 14 blocks on a 32-block cache")
	}
	if st.Running != 0 || st.Waiting != 0 || st.KVUsage != 0 {
		t.Errorf("after all requests: running %d, waiting %d, KV usage %g; want 0", st.Running, st.Waiting, st.KVUsage)
	}
	if st.Finished["length"] != 5 {
		t.Errorf("finished = %v, want 5 length", st.Finished)
	}
}

func TestCloseWaitsForInFlight(t *testing.T) {
	t.Parallel()
	cfg := fastTimed()
	cfg.DecodeBaseMs = 2
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(chatReq{Messages: []msg{{"user", "long"}}, MaxTokens: 60, IgnoreEOS: true, Stream: true}.withUsage())
	resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// Read the first event, then close the server while the stream runs.
	first := make([]byte, 10)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	rest, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("stream cut by Close: %v", err)
	}
	r := parseStream(t, append(first, rest...))
	if !r.done || r.usage == nil || r.usage.CompletionTokens != 60 {
		t.Errorf("stream incomplete after Close: done=%v usage=%+v", r.done, r.usage)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return after the last request finished")
	}
	if _, err := http.Get(s.URL + "/health"); err == nil {
		t.Error("server still accepts connections after Close")
	}
}

func TestClientDisconnectAborts(t *testing.T) {
	t.Parallel()
	cfg := fastTimed()
	cfg.DecodeBaseMs = 2
	s := startSim(t, cfg)
	b, _ := json.Marshal(chatReq{Messages: []msg{{"user", "bye"}}, MaxTokens: 2000, IgnoreEOS: true, Stream: true})
	resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(resp.Body, make([]byte, 10))
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Finished["abort"] != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("abort not counted: %+v", s.Stats().Finished)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := s.Stats(); st.Running != 0 || st.KVUsage != 0 {
		t.Errorf("aborted request still holds resources: running %d, KV usage %g", st.Running, st.KVUsage)
	}
}

func TestFirstByte(t *testing.T) {
	t.Parallel()
	cfg := fastTimed()
	cfg.RecordFirstByte = true
	s := startSim(t, cfg)
	sent := time.Now()
	mustDo(t, s, "/v1/chat/completions", chatReq{Messages: []msg{{"user", "x"}}, MaxTokens: 3, IgnoreEOS: true, Stream: true}, map[string]string{"X-Request-ID": "abc"})
	got := time.Now()
	fb, ok := s.FirstByte("abc")
	if !ok || fb.Before(sent) || fb.After(got) {
		t.Errorf("FirstByte(abc) = %v, %v; want within [%v, %v]", fb, ok, sent, got)
	}
	if _, ok := s.FirstByte("unknown"); ok {
		t.Error("FirstByte of an unknown id reported ok")
	}
}

// TestHandlerOnOwnServer serves Handler with httptest (no Start): the
// engines run, and Close stops them.
func TestHandlerOnOwnServer(t *testing.T) {
	t.Parallel()
	s, err := New(fastTimed())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	b, _ := json.Marshal(chatReq{Messages: []msg{{"user", "x"}}, MaxTokens: 3, IgnoreEOS: true, Stream: true}.withUsage())
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if r := parseStream(t, body); r.usage == nil || r.usage.CompletionTokens != 3 {
		t.Errorf("stream via own server: %s", body)
	}
	ts.Close()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestWaitingQueue: with --max-num-seqs 1 the other requests wait, show
// up in the waiting gauge, and all complete in turn.
func TestWaitingQueue(t *testing.T) {
	t.Parallel()
	cfg := fastTimed()
	cfg.MaxNumSeqs = 1
	cfg.DecodeBaseMs = 1
	s := startSim(t, cfg)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			resp, body, err := do(t, s, "/v1/chat/completions", chatReq{Messages: []msg{{"user", fmt.Sprintf("q%d", i)}}, MaxTokens: 200, IgnoreEOS: true}, nil)
			if err != nil || resp.StatusCode != 200 || !strings.Contains(string(body), `"completion_tokens":200`) {
				t.Errorf("request %d: %v %s", i, err, body)
			}
		})
	}
	maxWaiting, maxRunning := 0, 0
	deadline := time.Now().Add(20 * time.Second)
	for s.Stats().Finished["length"] < 3 && time.Now().Before(deadline) {
		st := s.Stats()
		maxWaiting = max(maxWaiting, st.Waiting)
		maxRunning = max(maxRunning, st.Running)
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	if maxRunning > 1 {
		t.Errorf("running reached %d with max-num-seqs 1", maxRunning)
	}
	if maxWaiting < 1 {
		t.Errorf("no request was ever seen waiting")
	}
}

// TestRouting: hash routing keeps a session (X-Correlation-ID) on one
// engine, so its turns hit that engine's cache; round robin spreads them.
func TestRouting(t *testing.T) {
	t.Parallel()
	for _, routing := range []string{"hash", "round-robin"} {
		s := startSim(t, Config{ZeroLatency: true, Engines: 2, Routing: routing})
		cached := 0
		for k := range 4 {
			_, c := cachedOf(t, s, conversation("route", k), map[string]string{"X-Correlation-ID": "session-1"})
			cached += c
		}
		st := s.Stats()
		e0, e1 := st.Engines[0].Requests, st.Engines[1].Requests
		switch routing {
		case "hash":
			if min(e0, e1) != 0 || max(e0, e1) != 4 {
				t.Errorf("hash: requests per engine %d/%d, want all 4 on one", e0, e1)
			}
		case "round-robin":
			if e0 != 2 || e1 != 2 {
				t.Errorf("round-robin: requests per engine %d/%d, want 2/2", e0, e1)
			}
		}
		if routing == "hash" && cached == 0 {
			t.Errorf("hash: no cache hits across a session's turns")
		}
	}
}

// TestStartErrors: a busy address fails Start with an error naming it, and
// Close after a failed Start is harmless.
func TestStartErrors(t *testing.T) {
	t.Parallel()
	a := startSim(t, Config{ZeroLatency: true})
	b, err := New(Config{ZeroLatency: true, Addr: a.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err == nil || !strings.Contains(err.Error(), a.Addr()) {
		t.Errorf("Start on a busy address: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close after a failed Start: %v", err)
	}
	if err := a.Start(); err == nil {
		t.Error("second Start succeeded")
	}
}

// TestLongContentTokens: long contents (raw JSON until a token-cache miss)
// with escapes and non-ASCII count exactly as the decoded text, on the
// first request and from the cache.
func TestLongContentTokens(t *testing.T) {
	t.Parallel()
	s := startSim(t, Config{ZeroLatency: true})
	long := strings.Repeat("line \"quoted\"\n\ttab é ✓ \u2028 \\ back/slash 😀\n", 60)
	for _, msgs := range [][]msg{
		{{"system", long}, {"user", "short"}},
		{{"system", long}, {"user", "short"}, {"assistant", long + "x"}, {"user", long}},
	} {
		for range 2 {
			p, _ := cachedOf(t, s, msgs, nil)
			if want := promptLen(msgs); p != want {
				t.Errorf("prompt tokens %d, want %d", p, want)
			}
		}
	}
}
