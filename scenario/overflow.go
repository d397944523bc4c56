package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentperf/agentperf/server/engines"
)

// Environment variables read by this package (docs/context-overflow.md).
const (
	EnvOverflowSubstrings = "AIPERF_AGENTX_CONTEXT_OVERFLOW_SUBSTRINGS"
	EnvOverflowRateLimit  = "AIPERF_AGENTX_CONTEXT_OVERFLOW_RATE_LIMIT"
)

// DefaultOverflowSubstrings is the default allowlist: aiperf's four
// ("context length", "maximum context", "context_length_exceeded",
// "prompt is too long") and then the overflow texts of every engine of the
// engines table that none of those match: vLLM's renderer wording
// "max_output_tokens=M cannot be greater than max_total_tokens=N",
// llama.cpp's "exceeds the available context size", "larger than the max
// context size", "Context size has been exceeded." and its error type
// exceed_context_size_error, TensorRT-LLM's "should not exceed
// max_seq_len". Together they match every overflow text listed in
// docs/engines.md.
var DefaultOverflowSubstrings = defaultOverflowSubstrings()

func defaultOverflowSubstrings() []string {
	out := []string{"context length", "maximum context", "context_length_exceeded", "prompt is too long"}
	for _, s := range engines.OverflowSubstrings() {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// DefaultOverflowRateLimit is the largest valid overflow rate: overflows
// over profiling responses (successes + errors + overflows).
const DefaultOverflowRateLimit = 0.01

// Classifier decides whether an error response is a context overflow
// (docs/context-overflow.md): a case-insensitive substring match over the
// raw body and over the
// parsed JSON error message. There is no status-code gating: any error body
// (400, 413, 500, a streamed error event) can match. The zero Classifier
// and a Classifier with no substrings match nothing. Safe for concurrent
// use.
type Classifier struct {
	subs [][]byte // lowercased, non-empty
}

// NewClassifier returns a classifier for substrings (matched
// case-insensitively; empty entries are dropped). An empty list disables
// detection.
func NewClassifier(substrings []string) *Classifier {
	c := &Classifier{}
	for _, s := range substrings {
		if s = strings.TrimSpace(s); s != "" {
			c.subs = append(c.subs, []byte(strings.ToLower(s)))
		}
	}
	return c
}

// DefaultClassifier returns a classifier for DefaultOverflowSubstrings
// (what ClassifierFromEnv gives when the variable is unset).
func DefaultClassifier() *Classifier { return NewClassifier(DefaultOverflowSubstrings) }

// Substrings returns the (lowercased) substrings the classifier matches.
func (c *Classifier) Substrings() []string {
	out := make([]string, len(c.subs))
	for i, s := range c.subs {
		out[i] = string(s)
	}
	return out
}

// Enabled reports whether the classifier can match anything.
func (c *Classifier) Enabled() bool { return c != nil && len(c.subs) > 0 }

// ClassifierFromEnv builds the classifier from
// AIPERF_AGENTX_CONTEXT_OVERFLOW_SUBSTRINGS read through getenv. Unset or
// empty (getenv cannot tell them apart): the defaults. Otherwise the value
// is a JSON list of strings, as aiperf's settings parse it
// (`["context length","too long"]`; `[]` disables detection), or, for
// convenience, a comma-separated list (`context length,too long`). A value
// that starts with "[" but is not a JSON list of strings is an error.
func ClassifierFromEnv(getenv func(string) string) (*Classifier, error) {
	subs, err := ParseOverflowSubstrings(getenv(EnvOverflowSubstrings))
	if err != nil {
		return nil, err
	}
	return NewClassifier(subs), nil
}

// ParseOverflowSubstrings parses a value of
// AIPERF_AGENTX_CONTEXT_OVERFLOW_SUBSTRINGS (see ClassifierFromEnv).
func ParseOverflowSubstrings(v string) ([]string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return append([]string(nil), DefaultOverflowSubstrings...), nil
	}
	if strings.HasPrefix(v, "[") {
		var out []string
		if err := json.Unmarshal([]byte(v), &out); err != nil {
			return nil, fmt.Errorf("%s=%s: not a JSON list of strings (%v); write e.g. [\"context length\",\"maximum context\"], or [] to disable overflow detection", EnvOverflowSubstrings, v, err)
		}
		return out, nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// IsOverflow reports whether an error body is a context overflow: some
// substring occurs, ignoring case, in the raw body, or in the parsed
// error message — `error.message` when `error` is an object, `error` when it
// is a string, or a top-level `message` (vLLM's flat envelope) or `detail`
// (aiperf parses only the first two; the others are a superset). The body may
// be a plain JSON document or the text of a streamed error event (SSE
// "data: {...}" lines are parsed too). Parsing only matters for bodies whose
// raw text hides the message (JSON escapes); the raw match comes first.
func (c *Classifier) IsOverflow(body []byte) bool {
	if !c.Enabled() || len(body) == 0 {
		return false
	}
	if c.match(body) {
		return true
	}
	if bytes.IndexByte(body, '\\') < 0 {
		// Without escapes every JSON string's text appears verbatim in the
		// raw body, which did not match: parsing cannot find more.
		return false
	}
	for _, msg := range errorMessages(body) {
		if c.match([]byte(msg)) {
			return true
		}
	}
	return false
}

// match is a case-insensitive substring search of every allowlist entry.
func (c *Classifier) match(text []byte) bool {
	var lower []byte
	ascii := true
	for _, b := range text {
		if b >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		lower = make([]byte, len(text))
		for i, b := range text {
			if 'A' <= b && b <= 'Z' {
				b += 'a' - 'A'
			}
			lower[i] = b
		}
	} else {
		lower = bytes.ToLower(text)
	}
	for _, s := range c.subs {
		if bytes.Contains(lower, s) {
			return true
		}
	}
	return false
}

// errorMessages extracts the error messages of a JSON body, or of each
// "data:" line of an SSE body.
func errorMessages(body []byte) []string {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return messageOf(trimmed)
	}
	var out []string
	for _, line := range bytes.Split(body, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			out = append(out, messageOf(bytes.TrimSpace(rest))...)
		}
	}
	return out
}

// messageOf returns error.message / error (string) / message of one JSON
// object.
func messageOf(doc []byte) []string {
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(doc, &env) != nil {
		return nil
	}
	var out []string
	add := func(raw json.RawMessage) {
		var s string
		if len(raw) > 0 && json.Unmarshal(raw, &s) == nil {
			out = append(out, s)
		}
	}
	if len(env.Error) > 0 {
		var inner struct {
			Message json.RawMessage `json:"message"`
		}
		if env.Error[0] == '{' && json.Unmarshal(env.Error, &inner) == nil {
			add(inner.Message)
		} else {
			add(env.Error)
		}
	}
	add(env.Message)
	add(env.Detail)
	return out
}

// OverflowRateLimitFromEnv reads AIPERF_AGENTX_CONTEXT_OVERFLOW_RATE_LIMIT
// (a fraction in [0, 1]) as JudgeInput.OverflowRateLimit: unset or empty
// gives an unset Opt (the default, DefaultOverflowRateLimit); "0" gives
// Some(0), no overflow allowed.
func OverflowRateLimitFromEnv(getenv func(string) string) (Opt[float64], error) {
	v := strings.TrimSpace(getenv(EnvOverflowRateLimit))
	if v == "" {
		return Opt[float64]{}, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 0 && f <= 1) {
		return Opt[float64]{}, fmt.Errorf("%s=%q: want a fraction between 0 and 1 (default %v)", EnvOverflowRateLimit, v, DefaultOverflowRateLimit)
	}
	return Some(f), nil
}
