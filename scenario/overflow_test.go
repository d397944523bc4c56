package scenario

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// The context-overflow texts of vLLM (every version's wording), SGLang and
// others, verbatim apart from the numbers (docs/context-overflow.md lists
// them with the server versions).
var overflowMessages = map[string]string{
	"vllm<=0.10 with max_tokens":         "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
	"vllm<=0.10 without max_tokens":      "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens in the messages, Please reduce the length of the messages.",
	"vllm 0.10.1 trailing None":          "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens in the messages, Please reduce the length of the messages. None",
	"vllm 0.11+ prompt alone":            "This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. Please reduce the length of the input messages.",
	"vllm 0.11+ max_tokens too large":    "'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's maximum context length is 4096 tokens and your request has 3500 input tokens (1000 > 4096 - 3500).",
	"vllm 0.11+ embeddings":              "This model's maximum context length is 512 tokens. However, you requested 600 tokens in the input for embedding generation. Please reduce the length of the input.",
	"vllm 0.15 with parameter":           "This model's maximum context length is 3 tokens. However, your request has 8 input tokens. Please reduce the length of the input messages. (parameter=input_tokens, value=8)",
	"vllm 0.15 max_tokens parameter":     "'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's maximum context length is 4096 tokens and your request has 3500 input tokens (1000 > 4096 - 3500). (parameter=max_tokens, value=1000)",
	"vllm renderer input tokens":         "You passed 5000 input tokens and requested 1000 output tokens. However, the model's context length is only 4096 tokens, resulting in a maximum input length of 3096 tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=5000)",
	"vllm renderer input characters":     "You passed 90000 input characters and requested 1000 output tokens. However, the model's context length is only 4096 tokens, resulting in a maximum input length of 3096 tokens (at most 30000 characters). Please reduce the length of the input prompt. (parameter=input_text, value=90000)",
	"vllm renderer max_output_tokens":    "max_output_tokens=8192 cannot be greater than max_total_tokens=4096. Please request fewer output tokens.",
	"vllm 2026 reworded":                 "This model's maximum context length is 4096 tokens. However, you requested 1000 output tokens and your prompt contains at least 3500 input tokens, for a total of at least 4500 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=3500)",
	"vllm 2026 reworded characters":      "This model's maximum context length is 4096 tokens. However, you requested 1000 output tokens and your prompt contains 90000 characters (more than 30000 characters, which is the upper bound for 3096 input tokens).",
	"sglang input longer than context":   "The input (5000 tokens) is longer than the model's context length (4096 tokens).",
	"sglang requested count exceeds max": "Requested token count exceeds the model's maximum context length of 4096 tokens. You requested a total of 5000 tokens: 4000 tokens from the input messages and 1000 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.",
	"openai code":                        "context_length_exceeded",
	"anthropic-style":                    "prompt is too long: 210000 tokens > 200000 maximum",
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// envelopes wrap a message the ways servers send it.
var envelopes = map[string]func(string) string{
	"vllm flat (<=0.10.0)": func(m string) string {
		return `{"object":"error","message":` + jsonString(m) + `,"type":"BadRequestError","param":null,"code":400}`
	},
	"vllm nested (>=0.10.1)": func(m string) string {
		return `{"error":{"message":` + jsonString(m) + `,"type":"BadRequestError","param":"input_tokens","code":400}}`
	},
	"sglang ErrorResponse": func(m string) string {
		return `{"object":"error","message":` + jsonString(m) + `,"type":"BadRequestError","param":null,"code":400}`
	},
	"error as string": func(m string) string { return `{"error":` + jsonString(m) + `}` },
	"streamed error event": func(m string) string {
		return "data: {\"id\":\"c1\",\"choices\":[]}\n\ndata: {\"error\":{\"message\":" + jsonString(m) + ",\"type\":\"BadRequestError\",\"code\":400}}\n\ndata: [DONE]\n\n"
	},
	"plain text": func(m string) string { return m },
	"upper case": func(m string) string { return strings.ToUpper(m) },
}

func TestClassifierMatchesEveryWording(t *testing.T) {
	t.Parallel()
	c := DefaultClassifier()
	for mname, msg := range overflowMessages {
		for ename, wrap := range envelopes {
			if body := wrap(msg); !c.IsOverflow([]byte(body)) {
				t.Errorf("%s in %s not classified as overflow: %s", mname, ename, body)
			}
		}
	}
}

func TestClassifierParsesEscapedMessages(t *testing.T) {
	t.Parallel()
	c := NewClassifier(DefaultOverflowSubstrings)
	// The raw text hides the words behind JSON escapes; only the parsed
	// error.message / error / message shows them.
	for _, body := range []string{
		`{"error":{"message":"This model's maximum\u0020context length is 10 tokens","code":400}}`,
		`{"error":"prompt is too\u0020long"}`,
		`{"object":"error","message":"Context\u0020Length exceeded"}`,
		"data: {\"error\":{\"message\":\"maximum\\u0020context\"}}\n\n",
	} {
		if !c.IsOverflow([]byte(body)) {
			t.Errorf("escaped overflow not classified: %s", body)
		}
	}
}

func TestClassifierNegatives(t *testing.T) {
	t.Parallel()
	c := NewClassifier(DefaultOverflowSubstrings)
	for name, body := range map[string]string{
		"500 internal error": `{"error":{"message":"internal error","type":"InternalServerError","param":null,"code":500}}`,
		"429 rate limit":     `{"error":{"message":"Too many requests, please retry later","type":"RateLimitError","code":429}}`,
		"400 unknown model":  `{"object":"error","message":"The model ` + "`foo`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`,
		"400 bad json":       `{"error":{"message":"Expecting value: line 1 column 1 (char 0)","code":400}}`,
		"502 html":           `<html><body><h1>502 Bad Gateway</h1></body></html>`,
		"timeout":            `context deadline exceeded`,
		"empty":              ``,
		"not json braces":    `{not json`,
		"stream with no err": "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
	} {
		if c.IsOverflow([]byte(body)) {
			t.Errorf("%s classified as overflow: %s", name, body)
		}
	}
}

func TestClassifierDisabledAndCustom(t *testing.T) {
	t.Parallel()
	msg := []byte(envelopes["vllm nested (>=0.10.1)"](overflowMessages["vllm 0.15 with parameter"]))
	var zero *Classifier
	for name, c := range map[string]*Classifier{"nil": zero, "empty list": NewClassifier(nil), "blank entries": NewClassifier([]string{"", "  "})} {
		if c.IsOverflow(msg) || c.Enabled() {
			t.Errorf("%s classifier matched", name)
		}
	}
	c := NewClassifier([]string{"Window Too Small"})
	if !c.IsOverflow([]byte(`{"error":{"message":"the KV window too small for request"}}`)) || c.IsOverflow(msg) {
		t.Error("custom substrings not honoured case-insensitively, or defaults still active")
	}
}

func TestClassifierFromEnv(t *testing.T) {
	t.Parallel()
	overflow := []byte(`{"error":{"message":"This model's maximum context length is 10 tokens."}}`)
	custom := []byte(`{"error":{"message":"KV budget blown"}}`)
	for _, c := range []struct {
		env                    string
		overflow, custom, fail bool
	}{
		{"", true, false, false},
		{"   ", true, false, false},
		{`["kv budget"]`, false, true, false},
		{`["kv budget", "maximum context"]`, true, true, false},
		{`[]`, false, false, false},
		{`kv budget, maximum context`, true, true, false},
		{`,`, false, false, false},
		{`["kv budget"`, false, false, true},
		{`[1, 2]`, false, false, true},
	} {
		cl, err := ClassifierFromEnv(func(k string) string {
			if k != EnvOverflowSubstrings {
				t.Errorf("read %s", k)
			}
			return c.env
		})
		if c.fail {
			if err == nil || !strings.Contains(err.Error(), EnvOverflowSubstrings) {
				t.Errorf("env %q: error %v, want one naming the variable", c.env, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("env %q: %v", c.env, err)
			continue
		}
		if cl.IsOverflow(overflow) != c.overflow || cl.IsOverflow(custom) != c.custom {
			t.Errorf("env %q: overflow %v custom %v, want %v %v", c.env, cl.IsOverflow(overflow), cl.IsOverflow(custom), c.overflow, c.custom)
		}
	}
}

func TestOverflowRateLimitFromEnv(t *testing.T) {
	t.Parallel()
	for env, want := range map[string]Opt[float64]{"": {}, " ": {}, "0.05": Some(0.05), "0": Some(0.0), "1": Some(1.0)} {
		got, err := OverflowRateLimitFromEnv(func(string) string { return env })
		if err != nil || got != want {
			t.Errorf("env %q: %v %v, want %v", env, got, err, want)
		}
	}
	for _, env := range []string{"x", "-0.1", "1.5", "NaN"} {
		if _, err := OverflowRateLimitFromEnv(func(string) string { return env }); err == nil {
			t.Errorf("env %q accepted", env)
		}
	}
}

func FuzzIsOverflow(f *testing.F) {
	for _, m := range overflowMessages {
		f.Add([]byte(envelopes["vllm nested (>=0.10.1)"](m)))
		f.Add([]byte(envelopes["streamed error event"](m)))
	}
	f.Add([]byte(`{"error":{"message":"internal error"}}`))
	f.Add([]byte(`{"error":"\u0063ontext length"}`))
	f.Add([]byte("data: {\"error\":\n"))
	c := NewClassifier(DefaultOverflowSubstrings)
	f.Fuzz(func(t *testing.T, body []byte) {
		got := c.IsOverflow(body)
		// A raw (ASCII-case-insensitive) occurrence always classifies.
		lower := bytes.ToLower(body)
		for _, s := range DefaultOverflowSubstrings {
			if bytes.Contains(lower, []byte(s)) && !got {
				t.Fatalf("body contains %q but is not an overflow: %q", s, body)
			}
		}
	})
}

func BenchmarkIsOverflow(b *testing.B) {
	c := NewClassifier(DefaultOverflowSubstrings)
	body := []byte(`{"error":{"message":"internal error while scheduling the request, please retry","type":"InternalServerError","param":null,"code":500}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		c.IsOverflow(body)
	}
}
