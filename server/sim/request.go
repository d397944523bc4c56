package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/agentperf/agentperf/internal/jsonx"
)

// completionRequest is the part of a chat or text completion request the
// simulator honours.
type completionRequest struct {
	Model               string        `json:"model"`
	Messages            []chatMessage `json:"messages"`
	Prompt              promptField   `json:"prompt"`
	MaxTokens           *int          `json:"max_tokens"`
	MaxCompletionTokens *int          `json:"max_completion_tokens"`
	Stream              bool          `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IgnoreEOS bool `json:"ignore_eos"`

	// contentTokens is set by promptTokens: the tokens of the contents
	// alone, without the chat template.
	contentTokens int
}

type chatMessage struct {
	Role    string      `json:"role"`
	Content textContent `json:"content"`
}

// textContent is a message content: a string, null, or an array of parts
// whose "text" fields are concatenated (OpenAI's content parts). A long
// string is kept as its raw JSON literal, which aliases the request body
// (alive for the whole handler): it is decoded only when the token cache
// does not already know it, so a conversation's history is neither
// decoded nor tokenized again on every turn.
type textContent struct {
	raw  []byte // a JSON string literal of at least tokenCacheMinBytes
	text string
}

func (c *textContent) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		*c = textContent{}
		return nil
	case b[0] == '"':
		if len(b) >= tokenCacheMinBytes {
			*c = textContent{raw: b}
			return nil
		}
		str, err := decodeJSONString(b)
		*c = textContent{text: str}
		return err
	case b[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		var sb bytes.Buffer
		for _, p := range parts {
			sb.WriteString(p.Text)
		}
		*c = textContent{text: sb.String()}
		return nil
	}
	return errors.New("content must be a string, null or an array of parts")
}

// promptField is the prompt of /v1/completions: a string, an array of one
// string, or an array of token ids.
type promptField struct {
	set  bool
	text string
	ids  []uint32
}

func (p *promptField) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	p.set = true
	if len(b) > 0 && b[0] == '"' {
		var err error
		p.text, err = decodeJSONString(b)
		return err
	}
	var strs []string
	if err := json.Unmarshal(b, &strs); err == nil {
		if len(strs) != 1 {
			return fmt.Errorf("prompt: the simulator serves one prompt per request, got %d", len(strs))
		}
		p.text = strs[0]
		return nil
	}
	if err := json.Unmarshal(b, &p.ids); err != nil {
		return errors.New("prompt must be a string, an array of one string, or an array of token ids")
	}
	return nil
}

// Chat template markers (ChatML). The simulator's template is
// "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then
// "<|im_start|>assistant\n"; each piece is tokenized separately.
const (
	tmplStart  = "<|im_start|>"
	tmplEnd    = "<|im_end|>\n"
	tmplAssist = "<|im_start|>assistant\n"
	// messages at least this long go through the token cache
	tokenCacheMinBytes = 1024
)

type appendEncoder interface {
	AppendEncode(dst []uint32, text string) []uint32
}

func (s *Server) appendEncode(dst []uint32, text string) []uint32 {
	if ae, ok := s.tok.(appendEncoder); ok {
		return ae.AppendEncode(dst, text)
	}
	return append(dst, s.tok.Encode(text)...)
}

// appendContent appends the tokens of a message content, through the
// token cache for long contents.
func (s *Server) appendContent(dst []uint32, text string) []uint32 {
	if len(text) < tokenCacheMinBytes {
		return s.appendEncode(dst, text)
	}
	k := maphash.String(s.hseed, text)
	if ids, ok := s.tcache.get(k); ok {
		return append(dst, ids...)
	}
	n := len(dst)
	dst = s.appendEncode(dst, text)
	s.tcache.put(k, append([]uint32(nil), dst[n:]...))
	return dst
}

// appendRawContent appends the tokens of a long content given as its JSON
// string literal, decoding it only on a token-cache miss.
func (s *Server) appendRawContent(dst []uint32, raw []byte) ([]uint32, error) {
	k := maphash.Bytes(s.hseed, raw)
	if ids, ok := s.tcache.get(k); ok {
		return append(dst, ids...), nil
	}
	text, err := decodeJSONString(raw)
	if err != nil {
		return dst, err
	}
	n := len(dst)
	dst = s.appendEncode(dst, text)
	s.tcache.put(k, append([]uint32(nil), dst[n:]...))
	return dst, nil
}

// promptTokens renders and tokenizes the prompt of req into dst.
func (s *Server) promptTokens(dst []uint32, req *completionRequest, chat bool) (_ []uint32, err error) {
	if !chat {
		if !req.Prompt.set {
			return dst, errors.New("prompt is required")
		}
		if req.Prompt.ids != nil {
			req.contentTokens = len(req.Prompt.ids)
			return append(dst, req.Prompt.ids...), nil
		}
		dst = s.appendContent(dst, req.Prompt.text)
		req.contentTokens = len(dst)
		return dst, nil
	}
	if len(req.Messages) == 0 {
		return dst, errors.New("messages must be a non-empty array")
	}
	for _, m := range req.Messages {
		if m.Role == "" {
			return dst, errors.New("every message needs a role")
		}
		dst = s.appendEncode(dst, tmplStart+m.Role+"\n")
		n := len(dst)
		if m.Content.raw == nil {
			dst = s.appendContent(dst, m.Content.text)
		} else if dst, err = s.appendRawContent(dst, m.Content.raw); err != nil {
			return dst, err
		}
		req.contentTokens += len(dst) - n
		dst = s.appendEncode(dst, tmplEnd)
	}
	return s.appendEncode(dst, tmplAssist), nil
}

var idsPool = sync.Pool{New: func() any { b := make([]uint32, 0, 4096); return &b }}

// fillerWords are the generated tokens: one word per token.
var fillerWords = [...]string{
	" the", " cache", " request", " token", " model", " server", " block", " prefix",
	" queue", " engine", " batch", " latency", " stream", " decode", " prefill", " agent",
	" tool", " file", " patch", " test", " build", " error", " value", " result",
	" and", " of", " to", " in", " is", " for", " with", " on",
	" function", " return", " import", " struct", " method", " field", " index", " slice",
	" read", " write", " check", " run", " call", " loop", " map", " list",
}

// appendWords appends the text of generated tokens [from, to) of a
// response whose word sequence starts at base.
func appendWords(dst []byte, base uint64, from, to int) []byte {
	for i := from; i < to; i++ {
		dst = append(dst, fillerWords[(base+uint64(i)*7)%uint64(len(fillerWords))]...)
	}
	return dst
}

// jsonString returns s as a JSON string literal.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// appendUsage appends an OpenAI usage object.
func appendUsage(dst []byte, prompt, completion, cached, reasoning int) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(prompt), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(prompt+completion), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(completion), 10)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, int64(cached), 10)
	dst = append(dst, '}')
	if reasoning > 0 {
		dst = append(dst, `,"completion_tokens_details":{"reasoning_tokens":`...)
		dst = strconv.AppendInt(dst, int64(reasoning), 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// decodeJSONString decodes a JSON string literal (quotes included) the way
// encoding/json does, without validating it twice: the decoder that calls
// UnmarshalJSON has already checked the syntax. Invalid UTF-8 and lone
// surrogates take encoding/json's path (U+FFFD replacement).
func decodeJSONString(b []byte) (string, error) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		var s string
		err := json.Unmarshal(b, &s)
		return s, err
	}
	in := b[1 : len(b)-1]
	ascii := true
	for _, c := range in {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if !ascii && !utf8.Valid(in) {
		var s string
		err := json.Unmarshal(b, &s)
		return s, err
	}
	i := bytes.IndexByte(in, '\\')
	if i < 0 {
		return string(in), nil
	}
	out := make([]byte, 0, len(in))
	out = append(out, in[:i]...)
	for i < len(in) {
		if c := in[i]; c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		var ok bool
		if out, i, ok = jsonx.AppendUnescaped(out, in, i); !ok {
			return "", errors.New("bad escape in JSON string")
		}
	}
	return string(out), nil
}
