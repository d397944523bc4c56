package sim

import (
	"encoding/json"
	"fmt"
	"sort"
)

// overflowWording is one context-overflow error text family with its
// envelope (the texts, by server version: docs/context-overflow.md).
type overflowWording struct {
	family string // vllm-0.10, vllm-0.11, vllm-renderer, vllm-2026, sglang
	nested bool   // {"error":{…}} instead of the flat {"object":"error",…}
}

// overflowWordings maps the values of Config.OverflowWording.
var overflowWordings = map[string]overflowWording{
	"vllm-0.10-flat":       {"vllm-0.10", false},
	"vllm-0.10-nested":     {"vllm-0.10", true},
	"vllm-0.11-flat":       {"vllm-0.11", false},
	"vllm-0.11-nested":     {"vllm-0.11", true},
	"vllm-renderer-flat":   {"vllm-renderer", false},
	"vllm-renderer-nested": {"vllm-renderer", true},
	"vllm-2026-flat":       {"vllm-2026", false},
	"vllm-2026-nested":     {"vllm-2026", true},
	"sglang":               {"sglang", false},
	"llamacpp":             {"llamacpp", true},
}

// OverflowWordings returns the accepted values of Config.OverflowWording,
// sorted:
//
//	vllm-0.10-*      vLLM ≤ 0.10 ("However, you requested T tokens (P in the messages, M in the completion)")
//	vllm-0.11-*      vLLM ≈0.11–0.15 ("your request has P input tokens" / "'max_tokens' or 'max_completion_tokens' is too large")
//	vllm-renderer-*  vLLM renderer refactor ("the model's context length is only N tokens")
//	vllm-2026-*      vLLM after PR 36197 ("you requested M output tokens and your prompt contains at least P input tokens")
//	sglang           SGLang's two texts (input longer than context / total exceeds)
//	llamacpp         llama.cpp's HTTP 400 exceed_context_size_error (a prompt of at least a slot's context)
//
// where * is flat (vLLM ≤ 0.10.0 envelope) or nested (v0.10.1+).
func OverflowWordings() []string {
	out := make([]string, 0, len(overflowWordings))
	for k := range overflowWordings {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// errorEnvelope renders an OpenAI-style error body in the flat or nested
// envelope. param is nil for JSON null.
func errorEnvelope(nested bool, message, typ string, param *string, code int) []byte {
	type inner struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	}
	type flat struct {
		Object  string  `json:"object"`
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	}
	var b []byte
	var err error
	if nested {
		b, err = json.Marshal(struct {
			Error inner `json:"error"`
		}{inner{message, typ, param, code}})
	} else {
		b, err = json.Marshal(flat{"error", message, typ, param, code})
	}
	if err != nil { // cannot happen: only strings and ints
		panic(err)
	}
	return b
}

// overflowCheck decides whether a request with prompt tokens p and
// requested output tokens m (mGiven false when the request set neither
// max_tokens nor max_completion_tokens) exceeds the context window n, and
// if so returns the error body in wording w. vLLM rejects p ≥ n or p+m > n;
// SGLang rejects p ≥ n or p+m ≥ n.
func overflowCheck(w overflowWording, n, p, m int, mGiven bool) (body []byte, over bool) {
	inputOnly := p >= n
	if w.family == "llamacpp" {
		// llama.cpp checks the prompt alone against the slot's context
		// (server-context.cpp); generation that fills the context ends the
		// stream later, which the simulator does not model.
		if !inputOnly {
			return nil, false
		}
		b, err := json.Marshal(map[string]any{"error": map[string]any{"code": 400,
			"message": fmt.Sprintf("request (%d tokens) exceeds the available context size (%d tokens), try increasing it", p, n),
			"type":    "exceed_context_size_error", "n_prompt_tokens": p, "n_ctx": n}})
		if err != nil {
			panic(err)
		}
		return b, true
	}
	switch {
	case inputOnly:
	case !mGiven:
		return nil, false
	case w.family == "sglang" && p+m >= n:
	case w.family != "sglang" && p+m > n:
	default:
		return nil, false
	}
	t := p + m
	var msg string
	var param *string
	inputTokens, maxTokens := "input_tokens", "max_tokens"
	switch w.family {
	case "vllm-0.10":
		if !mGiven {
			msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens in the messages, Please reduce the length of the messages.", n, p)
		} else {
			msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", n, t, p, m)
		}
	case "vllm-0.11":
		if inputOnly {
			msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages. (parameter=input_tokens, value=%d)", n, p, p)
			param = &inputTokens
		} else {
			msg = fmt.Sprintf("'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d). (parameter=max_tokens, value=%d)", m, n, p, m, n, p, m)
			param = &maxTokens
		}
	case "vllm-renderer":
		msg = fmt.Sprintf("You passed %d input tokens and requested %d output tokens. However, the model's context length is only %d tokens, resulting in a maximum input length of %d tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=%d)", p, m, n, max(n-m, 0), p)
		param = &inputTokens
	case "vllm-2026":
		msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains at least %d input tokens, for a total of at least %d tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=%d)", n, m, p, t, p)
		param = &inputTokens
	case "sglang":
		if inputOnly {
			msg = fmt.Sprintf("The input (%d tokens) is longer than the model's context length (%d tokens).", p, n)
		} else {
			msg = fmt.Sprintf("Requested token count exceeds the model's maximum context length of %d tokens. You requested a total of %d tokens: %d tokens from the input messages and %d tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.", n, t, p, m)
		}
	}
	return errorEnvelope(w.nested, msg, "BadRequestError", param, 400), true
}
