package replay

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// scanReference is what scanCompletion must report, computed with
// encoding/json: ok is false when encoding/json fails.
func scanReference(b []byte) (s completionScan, ok bool) {
	var c chunkJSON
	if err := json.Unmarshal(b, &c); err != nil {
		return s, false
	}
	for _, ch := range c.Choices {
		s.deltaContent = s.deltaContent || ch.Delta.Content != ""
		s.deltaReasoning = s.deltaReasoning || ch.Delta.ReasoningContent != "" || ch.Delta.Reasoning != ""
		s.msgContent = s.msgContent || ch.Message.Content != ""
		s.msgReasoning = s.msgReasoning || ch.Message.ReasoningContent != "" || ch.Message.Reasoning != ""
		s.text = s.text || ch.Text != ""
	}
	s.errorSet = c.hasError()
	s.usage, s.hasUsage = c.Usage.toMetrics()
	return s, true
}

// serverShapes are bodies and events as vLLM, SGLang and the simulator
// send them: scanCompletion must decide every one itself (no fallback).
var serverShapes = []string{
	string(benchFullBody),
	string(benchUsageLine[len("data: "):]),
	string(benchContentLine[len("data: "):]),
	`{"id":"chatcmpl-9","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"think","content":null,"tool_calls":[]},"logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":{"prompt_tokens":12,"total_tokens":20,"completion_tokens":8,"prompt_tokens_details":null},"prompt_logprobs":null,"kv_transfer_params":null}`,
	`{"id":"1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8,"completion_tokens_details":{"reasoning_tokens":2},"prompt_tokens_details":{"cached_tokens":0}}}`,
	`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" hello","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
	`{"choices":[{"index":0,"delta":{"content":"\u00e9\"q\"\\"},"finish_reason":null}],"usage":null}`,
	`{"object":"error","message":"boom","type":"BadRequestError","param":null,"code":400,"error":{"message":"x"}}`,
	` {"choices":[{"message":{"content":""},"text":""}],"error":null} ` + "\n",
}

// Inputs where encoding/json's rules must win: scanCompletion either
// agrees or leaves them to encoding/json.
var scanTricky = []string{
	``, `null`, `[]`, `"x"`, `{`, `{}`, `{} x`, `{"choices":null}`, `{"choices":[null,{}]}`,
	`{"choices":[{"delta":"x"}]}`, `{"choices":[{"text":5}]}`, `{"choices":{}}`, `{"usage":[]}`,
	`{"usage":{"prompt_tokens":1.5}}`, `{"usage":{"prompt_tokens":1e2}}`, `{"usage":{"prompt_tokens":-0}}`,
	`{"usage":{"prompt_tokens":9223372036854775807}}`, `{"usage":{"prompt_tokens":9223372036854775808}}`,
	`{"usage":{"prompt_tokens":-9223372036854775808}}`, `{"usage":{"prompt_tokens":-9223372036854775809}}`,
	`{"usage":{"prompt_tokens":1},"usage":{"completion_tokens":2}}`, `{"Usage":{"prompt_tokens":1}}`,
	`{"usage":{"PROMPT_TOKENS":1}}`, `{"usage":{"prompt_tokenſ":1}}`, `{"\u0075sage":{"prompt_tokens":1}}`,
	`{"choices":[{"delta":{"content":"a","content":""}}]}`, `{"choices":[{"delta":{"Content":"a"}}]}`,
	`{"usage":{"prompt_tokens_details":{"cached_tokens":null}}}`, `{"usage":{"prompt_tokens_details":{}}}`,
	`{"usage":{"prompt_tokens_details":{"cached_tokens":"1"}}}`, `{"error":{"message":"x"}}`, `{"error":"s"}`,
	`{"error":nul}`, `{"x":[1,{"a":"\u12"}]}`, `{"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`,
	`{"choices":[{"delta":{"content":"a\u0000"}}]}`, `{"choices":[{"delta":{"content":"` + "\x01" + `"}}]}`,
	"{\"choices\":[{\"delta\":{\"content\":\"\xff\"}}]}", `{"a":1,}`, `{"a" 1}`, `{"choices":[{},]}`,
}

func TestScanCompletionMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, c := range append(append([]string(nil), serverShapes...), scanTricky...) {
		got, ok := scanCompletion([]byte(c))
		want, wok := scanReference([]byte(c))
		if ok && (!wok || got != want) {
			t.Errorf("scanCompletion(%.100q) = %+v, ok; encoding/json: %+v, %v", c, got, want, wok)
		}
	}
	for _, c := range serverShapes {
		if _, ok := scanCompletion([]byte(c)); !ok {
			t.Errorf("scanCompletion(%.100q) fell back to encoding/json on a shape servers send", c)
		}
	}
}

// FuzzScanCompletion holds the one-pass parser to encoding/json: whenever
// it decides, it decides as a decode into chunkJSON does.
func FuzzScanCompletion(f *testing.F) {
	for _, c := range serverShapes {
		f.Add([]byte(c))
	}
	for _, c := range scanTricky {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := scanCompletion(b)
		if !ok {
			return
		}
		want, wok := scanReference(b)
		if !wok {
			t.Fatalf("scanCompletion(%q) accepted input encoding/json rejects", b)
		}
		if got != want {
			t.Fatalf("scanCompletion(%q) = %+v, encoding/json %+v", b, got, want)
		}
	})
}

// TestParseFullResponse covers the decisions built on the scan, on both
// paths (one pass, and encoding/json when the live text is wanted).
func TestParseFullResponse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body         string
		content, reasoning bool
		usage              bool
		errObj, malformed  bool
	}{
		{name: "server body", body: string(benchFullBody), content: true, usage: true},
		{name: "reasoning only", body: `{"choices":[{"message":{"content":null,"reasoning_content":"r"}}]}`, reasoning: true},
		{name: "text", body: `{"choices":[{"text":"x"}],"usage":{"prompt_tokens":1}}`, content: true, usage: true},
		{name: "empty", body: `{"choices":[{"message":{"content":""}}]}`},
		{name: "error null is no error", body: `{"choices":[{"message":{"content":"a"}}],"error":null}`, content: true},
		{name: "error object", body: `{"error":{"message":"boom"}}`, errObj: true},
		{name: "not json", body: `{"choices":[`, malformed: true},
		{name: "type mismatch", body: `{"choices":[{"message":{"content":5}}]}`, malformed: true},
	}
	for _, tc := range cases {
		for _, live := range []bool{false, true} {
			var text []byte
			var tp *[]byte
			if live {
				tp = &text
			}
			r, err := parseFullResponse([]byte(tc.body), tp)
			switch {
			case tc.errObj:
				if !isErr(err, errErrorObject) {
					t.Errorf("%s (live %v): err = %v, want errErrorObject", tc.name, live, err)
				}
			case tc.malformed:
				if !isErr(err, errMalformed) {
					t.Errorf("%s (live %v): err = %v, want errMalformed", tc.name, live, err)
				}
			case err != nil:
				t.Errorf("%s (live %v): %v", tc.name, live, err)
			case r.content != tc.content || r.reasoning != tc.reasoning || r.hasUsage != tc.usage:
				t.Errorf("%s (live %v): %+v", tc.name, live, r)
			}
		}
	}
	var text []byte
	if _, err := parseFullResponse([]byte(`{"choices":[{"message":{"content":"Hi \"you\""},"text":"!"}]}`), &text); err != nil || string(text) != `Hi "you"!` {
		t.Errorf("live text = %q, %v", text, err)
	}
}

func BenchmarkScanCompletion(b *testing.B) {
	for _, c := range []struct {
		name string
		in   []byte
	}{{"full-body", benchFullBody}, {"usage-event", benchUsageLine[len("data: "):]}, {"content-event", benchContentLine[len("data: "):]}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.in)))
			done := cpuClock(b)
			for b.Loop() {
				if _, ok := scanCompletion(c.in); !ok {
					b.Fatal("fell back")
				}
			}
			done()
		})
	}
}

func BenchmarkDecodeFullResponse(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchFullBody)))
	for b.Loop() {
		if r, err := decodeFullResponse(benchFullBody, nil); !r.content || err != nil {
			b.Fatal(r, err)
		}
	}
}

func isErr(err, target error) bool { return err != nil && errors.Is(err, target) }
