package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/text/tokenizer"
)

// startSim builds and starts a server, closed at the end of the test.
func startSim(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// fastTimed is a timed (not zero-latency) configuration with short steps.
func fastTimed() Config {
	return Config{DecodeBaseMs: 0.5, PrefillTokensPerSec: 5e6, MaxModelLen: 4096, KVCapacityTokens: 65536}
}

type msg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatReq struct {
	Model               string         `json:"model,omitempty"`
	Messages            []msg          `json:"messages,omitempty"`
	Prompt              string         `json:"prompt,omitempty"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
	Stream              bool           `json:"stream,omitempty"`
	StreamOptions       map[string]any `json:"stream_options,omitempty"`
	IgnoreEOS           bool           `json:"ignore_eos,omitempty"`
}

func (r chatReq) withUsage() chatReq {
	r.StreamOptions = map[string]any{"include_usage": true}
	return r
}

// do posts body to path and returns the response with its body read.
func do(t testing.TB, s *Server, path string, body any, hdr map[string]string) (*http.Response, []byte, error) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("POST", s.URL+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

// mustDo is do that fails the test on a transport error or a non-200.
func mustDo(t testing.TB, s *Server, path string, body any, hdr map[string]string) []byte {
	t.Helper()
	resp, data, err := do(t, s, path, body, hdr)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: status %d: %s", path, resp.StatusCode, data)
	}
	return data
}

// sseData splits an SSE body into its data payloads, checking that every
// event is exactly one "data: …" line followed by a blank line.
func sseData(t testing.TB, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	expectBlank := false
	for sc.Scan() {
		line := sc.Text()
		if expectBlank {
			if line != "" {
				t.Fatalf("SSE: want a blank line after an event, got %q", line)
			}
			expectBlank = false
			continue
		}
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("SSE: want a data: line, got %q", line)
		}
		out = append(out, d)
		expectBlank = true
	}
	if expectBlank {
		t.Fatalf("SSE: body does not end with a blank line")
	}
	return out
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role             *string `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"delta"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// streamResult is a parsed streaming response.
type streamResult struct {
	chunks    []chunk
	content   []string // non-empty content deltas (or text), in order
	reasoning []string
	usage     *usage
	finish    string
	done      bool
}

func parseStream(t testing.TB, body []byte) streamResult {
	t.Helper()
	var r streamResult
	for i, d := range sseData(t, body) {
		if d == "[DONE]" {
			r.done = true
			continue
		}
		if r.done {
			t.Fatalf("event after [DONE]: %q", d)
		}
		var c chunk
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("event %d is not JSON: %v: %q", i, err, d)
		}
		r.chunks = append(r.chunks, c)
		if c.Usage != nil {
			r.usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil && *ch.Delta.Content != "" {
				r.content = append(r.content, *ch.Delta.Content)
			}
			if ch.Text != nil && *ch.Text != "" {
				r.content = append(r.content, *ch.Text)
			}
			if ch.Delta.ReasoningContent != nil && *ch.Delta.ReasoningContent != "" {
				r.reasoning = append(r.reasoning, *ch.Delta.ReasoningContent)
			}
			if ch.FinishReason != nil {
				r.finish = *ch.FinishReason
			}
		}
	}
	return r
}

// promptLen is the documented prompt token count of msgs: the ChatML-like
// template with each piece tokenized by the builtin tokenizer.
func promptLen(msgs []msg) int {
	tok := tokenizer.Builtin()
	n := 0
	for _, m := range msgs {
		n += len(tok.Encode("<|im_start|>"+m.Role+"\n")) + len(tok.Encode(m.Content)) + len(tok.Encode("<|im_end|>\n"))
	}
	return n + len(tok.Encode("<|im_start|>assistant\n"))
}

// words returns a deterministic text of about n words starting with tag.
func words(tag string, n int) string {
	var b strings.Builder
	b.WriteString(tag)
	vocab := []string{"alpha", "beta", "gamma", "delta", "kernel", "buffer", "socket", "thread", "vector", "matrix"}
	for i := range n {
		b.WriteByte(' ')
		b.WriteString(vocab[(i*7+len(tag))%len(vocab)])
	}
	return b.String()
}
