package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOverflowWordings checks the exact text and envelope of every wording
// (docs/context-overflow.md), for prompt+max over the window and for a
// prompt alone over it, streaming and not.
func TestOverflowWordings(t *testing.T) {
	t.Parallel()
	const n = 100
	msgs := []msg{{"user", words("overflow", 20)}}
	p := promptLen(msgs)
	if p >= n || p < 20 {
		t.Fatalf("prompt has %d tokens; the test needs 20..99", p)
	}
	m := n - p + 5
	tt := p + m
	long := []msg{{"user", words("overflow", 80)}}
	pl := promptLen(long)
	if pl < n {
		t.Fatalf("long prompt has %d tokens; the test needs ≥ %d", pl, n)
	}
	cases := []struct {
		wording    string
		nested     bool
		param      any // nil or string
		total      string
		inputParam any
		input      string
	}{
		{"vllm-0.10-flat", false, nil,
			fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", n, tt, p, m),
			nil, fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens in the messages, Please reduce the length of the messages.", n, pl)},
		{"vllm-0.10-nested", true, nil,
			fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", n, tt, p, m),
			nil, fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens in the messages, Please reduce the length of the messages.", n, pl)},
		{"vllm-0.11-nested", true, "max_tokens",
			fmt.Sprintf("'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d). (parameter=max_tokens, value=%d)", m, n, p, m, n, p, m),
			"input_tokens", fmt.Sprintf("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages. (parameter=input_tokens, value=%d)", n, pl, pl)},
		{"vllm-0.11-flat", false, "max_tokens",
			fmt.Sprintf("'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d). (parameter=max_tokens, value=%d)", m, n, p, m, n, p, m),
			"input_tokens", fmt.Sprintf("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages. (parameter=input_tokens, value=%d)", n, pl, pl)},
		{"vllm-renderer-nested", true, "input_tokens",
			fmt.Sprintf("You passed %d input tokens and requested %d output tokens. However, the model's context length is only %d tokens, resulting in a maximum input length of %d tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=%d)", p, m, n, n-m, p),
			"input_tokens", ""},
		{"vllm-renderer-flat", false, "input_tokens",
			fmt.Sprintf("You passed %d input tokens and requested %d output tokens. However, the model's context length is only %d tokens, resulting in a maximum input length of %d tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=%d)", p, m, n, n-m, p),
			"input_tokens", ""},
		{"vllm-2026-nested", true, "input_tokens",
			fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains at least %d input tokens, for a total of at least %d tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=%d)", n, m, p, tt, p),
			"input_tokens", ""},
		{"vllm-2026-flat", false, "input_tokens",
			fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains at least %d input tokens, for a total of at least %d tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=%d)", n, m, p, tt, p),
			"input_tokens", ""},
		{"sglang", false, nil,
			fmt.Sprintf("Requested token count exceeds the model's maximum context length of %d tokens. You requested a total of %d tokens: %d tokens from the input messages and %d tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.", n, tt, p, m),
			nil, fmt.Sprintf("The input (%d tokens) is longer than the model's context length (%d tokens).", pl, n)},
	}
	// llamacpp has an envelope of its own: TestOverflowWordingLlamaCpp.
	if len(cases) != len(OverflowWordings())-1 {
		t.Fatalf("%d cases for %d wordings", len(cases), len(OverflowWordings()))
	}
	// The stricter matcher of docs/context-overflow.md (vLLM's stable
	// fragments) must match every vLLM text.
	vllmMatcher := regexp.MustCompile(`maximum context length is \d+ tokens|'max_tokens' or 'max_completion_tokens' is too large|the model's context length is only \d+ tokens|\(parameter=input_tokens`)
	for _, c := range cases {
		t.Run(c.wording, func(t *testing.T) {
			t.Parallel()
			s := startSim(t, Config{ZeroLatency: true, MaxModelLen: n, KVCapacityTokens: 1024, OverflowWording: c.wording})
			check := func(name string, req chatReq, wantMsg string, wantParam any) {
				t.Helper()
				for _, stream := range []bool{false, true} {
					req.Stream = stream
					resp, body, err := do(t, s, "/v1/chat/completions", req, nil)
					if err != nil {
						t.Fatal(err)
					}
					if resp.StatusCode != 400 {
						t.Fatalf("%s stream=%v: status %d, want 400: %s", name, stream, resp.StatusCode, body)
					}
					var env map[string]any
					if err := json.Unmarshal(body, &env); err != nil {
						t.Fatalf("%s: body is not JSON: %s", name, body)
					}
					obj := env
					if c.nested {
						inner, ok := env["error"].(map[string]any)
						if !ok || len(env) != 1 {
							t.Fatalf("%s: want the nested envelope, got %s", name, body)
						}
						obj = inner
					} else if env["object"] != "error" {
						t.Fatalf("%s: want the flat envelope with object=error, got %s", name, body)
					}
					if obj["message"] != wantMsg {
						t.Errorf("%s: message\n got %q\nwant %q", name, obj["message"], wantMsg)
					}
					if obj["type"] != "BadRequestError" || obj["code"] != float64(400) || obj["param"] != wantParam {
						t.Errorf("%s: type/code/param = %v/%v/%v", name, obj["type"], obj["code"], obj["param"])
					}
					if strings.HasPrefix(c.wording, "vllm") && !vllmMatcher.MatchString(wantMsg) {
						t.Errorf("%s: the robust vLLM matcher misses %q", name, wantMsg)
					}
				}
			}
			check("prompt+max", chatReq{Messages: msgs, MaxCompletionTokens: m}, c.total, c.param)
			if c.input != "" {
				req := chatReq{Messages: long}
				if c.wording != "vllm-0.10-flat" && c.wording != "vllm-0.10-nested" {
					req.MaxTokens = 5
				}
				check("prompt alone", req, c.input, c.inputParam)
			}
			// Exactly at the window is fine for vLLM, not for SGLang.
			resp, body, err := do(t, s, "/v1/chat/completions", chatReq{Messages: msgs, MaxTokens: n - p}, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := 200
			if c.wording == "sglang" {
				want = 400
			}
			if resp.StatusCode != want {
				t.Errorf("prompt+max == window: status %d, want %d: %s", resp.StatusCode, want, body)
			}
			if got := s.Stats().Overflows; got < 2 {
				t.Errorf("overflow counter = %d", got)
			}
		})
	}
}

// isReset reports whether err is a transport failure (reset or EOF).
func isReset(err error) bool {
	return err != nil && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "EOF"))
}

func TestFaults(t *testing.T) {
	t.Parallel()
	every := FaultRule{Every: 1}
	req := chatReq{Messages: []msg{{"user", "fault please"}}, MaxTokens: 10, IgnoreEOS: true, Stream: true}.withUsage()
	type check func(t *testing.T, resp *http.Response, body []byte, err error)
	status := func(code int, retry bool) check {
		return func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil || resp.StatusCode != code {
				t.Fatalf("want HTTP %d, got %v %v", code, resp, err)
			}
			var env struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(body, &env) != nil || env.Error.Code != code || env.Error.Message == "" {
				t.Errorf("error body = %s", body)
			}
			if retry != (resp.Header.Get("Retry-After") != "") {
				t.Errorf("Retry-After = %q", resp.Header.Get("Retry-After"))
			}
		}
	}
	cases := []struct {
		name  string
		set   func(f *FaultConfig)
		check check
	}{
		{FaultHTTP500, func(f *FaultConfig) { f.HTTP500 = every }, status(500, false)},
		{FaultHTTP503, func(f *FaultConfig) { f.HTTP503 = every }, status(503, true)},
		{FaultHTTP429, func(f *FaultConfig) { f.HTTP429 = every }, status(429, true)},
		{FaultResetBeforeHeaders, func(f *FaultConfig) { f.ResetBeforeHeaders = every }, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if resp != nil || !isReset(err) {
				t.Errorf("want a reset before any response, got %v %v", resp, err)
			}
		}},
		{FaultSlowFirstByte, func(f *FaultConfig) { f.SlowFirstByte = every; f.SlowFirstByteFor = 20 * time.Millisecond }, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil || !parseStream(t, body).done {
				t.Errorf("slow first byte must still complete: %v", err)
			}
		}},
		{FaultResetMidStream, func(f *FaultConfig) { f.ResetMidStream = every }, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if resp == nil || resp.StatusCode != 200 || !isReset(err) {
				t.Fatalf("want 200 then a reset, got %v %v", resp, err)
			}
			if !strings.Contains(string(body), `"content":" `) || strings.Contains(string(body), "[DONE]") {
				t.Errorf("want some content and no [DONE] before the reset, got %q", body)
			}
		}},
		{FaultStall, func(f *FaultConfig) { f.Stall = every; f.StallFor = 20 * time.Millisecond }, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil {
				t.Fatal(err)
			}
			r := parseStream(t, body)
			if !r.done || len(r.content) != 10 || r.usage == nil {
				t.Errorf("stalled stream must complete: %s", body)
			}
		}},
		{FaultMalformedSSE, func(f *FaultConfig) { f.MalformedSSE = every }, func(t *testing.T, resp *http.Response, body []byte, err error) {
			bad := 0
			for _, d := range sseData(t, body) {
				if d != "[DONE]" && !json.Valid([]byte(d)) {
					bad++
				}
			}
			if bad != 1 || !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
				t.Errorf("want exactly one malformed event and a normal end, got %d: %s", bad, body)
			}
		}},
		{FaultStreamError, func(f *FaultConfig) { f.StreamError = every }, func(t *testing.T, resp *http.Response, body []byte, err error) {
			r := parseStream(t, body)
			var errEvents int
			for _, c := range r.chunks {
				if c.Error != nil {
					errEvents++
					var e struct {
						Message string `json:"message"`
						Code    int    `json:"code"`
					}
					if json.Unmarshal(c.Error, &e) != nil || e.Code != 500 || e.Message == "" {
						t.Errorf("error event = %s", c.Error)
					}
				}
			}
			if errEvents != 1 || !r.done || r.usage != nil || len(r.content) == 0 || len(r.content) >= 10 {
				t.Errorf("want content, one error event, [DONE], no usage; got %s", body)
			}
		}},
		{FaultMissingUsage, func(f *FaultConfig) { f.MissingUsage = every }, func(t *testing.T, resp *http.Response, body []byte, err error) {
			r := parseStream(t, body)
			if r.usage != nil || !r.done || len(r.content) != 10 {
				t.Errorf("want a complete stream without usage: %s", body)
			}
		}},
	}
	for _, c := range cases {
		for _, zl := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/zero-latency=%v", c.name, zl), func(t *testing.T) {
				t.Parallel()
				cfg := fastTimed()
				cfg.ZeroLatency = zl
				c.set(&cfg.Faults)
				s := startSim(t, cfg)
				resp, body, err := do(t, s, "/v1/chat/completions", req, nil)
				c.check(t, resp, body, err)
				if got := s.Stats().Faults; got[c.name] != 1 || len(got) != 1 {
					t.Errorf("fault counters = %v, want %s: 1", got, c.name)
				}
			})
		}
	}
}

func TestFaultsNonStreaming(t *testing.T) {
	t.Parallel()
	every := FaultRule{Every: 1}
	req := chatReq{Messages: []msg{{"user", "fault please"}}, MaxTokens: 10, IgnoreEOS: true}
	cases := []struct {
		name string
		set  func(f *FaultConfig)
		ok   func(resp *http.Response, body []byte, err error) bool
	}{
		{FaultResetMidStream, func(f *FaultConfig) { f.ResetMidStream = every }, func(r *http.Response, b []byte, err error) bool { return isReset(err) }},
		{FaultMalformedSSE, func(f *FaultConfig) { f.MalformedSSE = every }, func(r *http.Response, b []byte, err error) bool {
			return err == nil && r.StatusCode == 200 && !json.Valid(b)
		}},
		{FaultStreamError, func(f *FaultConfig) { f.StreamError = every }, func(r *http.Response, b []byte, err error) bool { return err == nil && r.StatusCode == 500 }},
		{FaultMissingUsage, func(f *FaultConfig) { f.MissingUsage = every }, func(r *http.Response, b []byte, err error) bool {
			return err == nil && json.Valid(b) && !strings.Contains(string(b), `"usage"`)
		}},
		{FaultStall, func(f *FaultConfig) { f.Stall = every; f.StallFor = 10 * time.Millisecond }, func(r *http.Response, b []byte, err error) bool {
			return err == nil && json.Valid(b) && strings.Contains(string(b), `"completion_tokens":10`)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{ZeroLatency: true}
			c.set(&cfg.Faults)
			s := startSim(t, cfg)
			resp, body, err := do(t, s, "/v1/chat/completions", req, nil)
			if !c.ok(resp, body, err) {
				t.Errorf("unexpected outcome: %v %v %s", resp, err, body)
			}
			if s.Stats().Faults[c.name] != 1 {
				t.Errorf("fault counters = %v", s.Stats().Faults)
			}
		})
	}
}

func TestFaultDownWindow(t *testing.T) {
	t.Parallel()
	cfg := Config{ZeroLatency: true}
	cfg.Faults.DownAfterRequests = 2
	cfg.Faults.DownFor = 200 * time.Millisecond
	s := startSim(t, cfg)
	req := chatReq{Messages: []msg{{"user", "x"}}, MaxTokens: 2}
	for i := range 2 {
		if resp, _, err := do(t, s, "/v1/chat/completions", req, nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("request %d before the window: %v %v", i+1, resp, err)
		}
	}
	if _, _, err := do(t, s, "/v1/chat/completions", req, nil); !isReset(err) {
		t.Fatalf("request 3 opens the down window and must be reset, got %v", err)
	}
	// New connections are reset too while down.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := c.Get(s.URL + "/health"); err == nil {
		resp.Body.Close()
		if s.isDown(time.Now()) {
			t.Errorf("a new connection was served during the down window")
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, _, err := do(t, s, "/v1/chat/completions", req, nil)
		if err == nil && resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server never came back: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s.Stats().Faults[FaultDown] < 1 {
		t.Errorf("down fault not counted: %v", s.Stats().Faults)
	}
}

// TestFaultDeterminism: the same seed picks the same requests, whatever the
// arrival order; a rate gives about that fraction.
func TestFaultDeterminism(t *testing.T) {
	t.Parallel()
	mk := func(seed int64) *Server {
		cfg := Config{ZeroLatency: true, Seed: seed}
		cfg.Faults.HTTP500 = FaultRule{Rate: 0.1}
		cfg.Faults.Stall = FaultRule{Every: 7}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b, c := mk(1), mk(1), mk(2)
	hits, same := 0, 0
	for n := int64(1); n <= 2000; n++ {
		fa, fb, fc := a.pickFault(n), b.pickFault(n), c.pickFault(n)
		if fa != fb {
			t.Fatalf("request %d: same seed, faults %d and %d", n, fa, fb)
		}
		if fa == 1 {
			hits++
		}
		if fa == fc {
			same++
		}
		if fa != 1 && (n%7 == 0) != (fa == 7) {
			t.Fatalf("request %d: every-7 stall rule gave fault %d", n, fa)
		}
	}
	if hits < 140 || hits > 260 {
		t.Errorf("rate 0.1 hit %d of 2000", hits)
	}
	if same == 2000 {
		t.Errorf("different seeds chose identical faults")
	}
}

// TestFaultAfterRequests: the first After requests get no per-request
// fault (a client's warmup passes), later ones follow the rules as
// without it, Every still counting from request 1.
func TestFaultAfterRequests(t *testing.T) {
	t.Parallel()
	cfg := Config{ZeroLatency: true}
	cfg.Faults.HTTP500 = FaultRule{Rate: 1}
	cfg.Faults.Stall = FaultRule{Every: 5}
	cfg.Faults.After = 16
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for n := int64(1); n <= 40; n++ {
		got := s.pickFault(n)
		switch {
		case n <= 16 && got != -1:
			t.Fatalf("request %d (inside the first 16) got fault %d", n, got)
		case n > 16 && got == -1:
			t.Fatalf("request %d got no fault", n)
		}
	}
	if _, err := ParseURL("sim://?fault-after-requests=-1", DefaultConfig()); err != nil {
		t.Fatal(err) // parsing accepts it; New rejects it
	}
	bad, _ := ParseURL("sim://?fault-after-requests=-1", DefaultConfig())
	if _, err := New(bad); err == nil || !strings.Contains(err.Error(), "fault-after-requests") {
		t.Fatalf("a negative fault-after-requests: %v", err)
	}
}

// TestOverflowWordingLlamaCpp: with --overflow-wording llamacpp the
// simulator answers a prompt of at least the window with llama.cpp's 400
// (type exceed_context_size_error, n_prompt_tokens, n_ctx), streaming or
// not, and, as llama.cpp, does not check prompt + max_tokens up front.
func TestOverflowWordingLlamaCpp(t *testing.T) {
	t.Parallel()
	const n = 100
	s := startSim(t, Config{ZeroLatency: true, MaxModelLen: n, KVCapacityTokens: 1024, OverflowWording: "llamacpp"})
	long := []msg{{"user", words("overflow", 80)}}
	pl := promptLen(long)
	for _, stream := range []bool{false, true} {
		resp, body, err := do(t, s, "/v1/chat/completions", chatReq{Messages: long, MaxTokens: 5, Stream: stream}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"error":{"code":400,"message":"request (%d tokens) exceeds the available context size (%d tokens), try increasing it","n_ctx":%d,"n_prompt_tokens":%d,"type":"exceed_context_size_error"}}`, pl, n, n, pl)
		if resp.StatusCode != 400 || string(body) != want {
			t.Errorf("stream=%v: %d %s\nwant 400 %s", stream, resp.StatusCode, body, want)
		}
	}
	short := []msg{{"user", words("overflow", 20)}}
	if resp, body, err := do(t, s, "/v1/chat/completions", chatReq{Messages: short, MaxTokens: n}, nil); err != nil || resp.StatusCode != 200 {
		t.Errorf("prompt below the window with a large max_tokens: %v %s", err, body)
	}
}
