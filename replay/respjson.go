package replay

import (
	"github.com/agentperf/agentperf/internal/jsonx"
	"github.com/agentperf/agentperf/metrics"
)

// completionScan is what one chat.completion (non-streaming body) or
// chat.completion.chunk (SSE event) object carries, as far as a replay
// needs it: whether any choice has non-empty content or reasoning, a
// top-level error, and the usage object.
type completionScan struct {
	deltaContent, deltaReasoning bool // choices[].delta.content / .reasoning_content, .reasoning
	msgContent, msgReasoning     bool // choices[].message.…
	text                         bool // choices[].text (the completions endpoint)
	errorSet                     bool // a top-level "error" that is not null
	hasUsage                     bool // a "usage" object (not null)
	usage                        metrics.Usage
}

// scanDepthLimit bounds the nesting scanCompletion skips through; deeper
// input goes to encoding/json, which allows 10000 levels.
const scanDepthLimit = 512

// liveText asks scanCompletionText for the reply's text: the decoded
// content (of each choice's delta when delta is set, else of its message)
// and then the choice's text, choice by choice, appended to *dst exactly
// as a decode with encoding/json would give them.
type liveText struct {
	dst   *[]byte // nil: no text wanted
	delta bool
	// deltaLits counts the string (not null) values of the deltas'
	// content, reasoning_content and reasoning over every choice;
	// deltaLit is the last one's literal, quotes included, a subslice of
	// the scanned bytes, and deltaReasoning says it was a reasoning field
	// (see eventShape).
	deltaLits      int
	deltaLit       []byte
	deltaReasoning bool
}

// msgLits are the string literals (quotes included) of one delta's or
// message's fields.
type msgLits struct {
	content []byte // nil when absent or null
	last    []byte // the last string field's
	n       int    // how many fields were strings
}

// scanCompletion reads b, one JSON object with optional surrounding
// space, in one pass and without allocating, and reports what decoding it
// with encoding/json into chunkJSON would give (FuzzScanCompletion holds
// it to that). ok is false whenever it cannot decide exactly as
// encoding/json would, and the caller then decodes with encoding/json
// (which also words the error): invalid JSON, a known field of the wrong
// type (encoding/json's UnmarshalTypeError), a known key given twice
// (encoding/json merges them), a key that only case-insensitively matches
// a known one, a key with escapes or non-ASCII bytes, an integer that is
// not a plain int64, nesting deeper than scanDepthLimit, or a top-level
// value that is not an object. Servers send none of these, so the
// fallback costs nothing in practice.
func scanCompletion(b []byte) (s completionScan, ok bool) {
	return scanCompletionText(b, nil)
}

// scanCompletionText is scanCompletion that also appends the reply's text
// to lt.dst when lt is not nil (live-assistant mode). When ok is false,
// *lt.dst may hold part of the text: the caller cuts it back.
func scanCompletionText(b []byte, lt *liveText) (s completionScan, ok bool) {
	i, ok := scanObject(b, jsonx.SkipSpace(b, 0), false, topNames, scanDepthLimit-1, func(k uint8, i int) (int, bool) {
		switch k {
		case topChoices:
			return scanChoices(b, i, &s, lt)
		case topUsage:
			return scanUsage(b, i, &s)
		default: // topError
			if jsonx.HasLiteral(b, i, "null") {
				return i + 4, true
			}
			s.errorSet = true
			return jsonx.SkipValue(b, i, scanDepthLimit-1)
		}
	})
	return s, ok && jsonx.SkipSpace(b, i) == len(b)
}

// scanObject reads the object at b[i] (or null, when nullable) whose
// known fields are names: field reads the value of names[k], which starts
// at i, and returns the index after it. The values of other keys are
// skipped, nested at most depth deep. A field given twice, or a key that
// matches a name only up to ASCII case (encoding/json would match it), is
// refused, leaving the object to encoding/json.
func scanObject(b []byte, i int, nullable bool, names []string, depth int, field func(k uint8, i int) (int, bool)) (int, bool) {
	if nullable && jsonx.HasLiteral(b, i, "null") {
		return i + 4, true
	}
	if i >= len(b) || b[i] != '{' {
		return i, false
	}
	i, empty, ok := jsonx.OpenObject(b, i)
	if !ok {
		return i, false
	}
	var seen uint8
	for !empty {
		var key []byte
		if key, i, ok = readKey(b, i); !ok {
			return i, false
		}
		switch k := matchKey(key, names); k {
		case keyUnknown:
			i, ok = jsonx.SkipValue(b, i, depth)
		case keyFolded:
			return i, false
		default:
			if seen&(1<<k) != 0 {
				return i, false
			}
			seen |= 1 << k
			i, ok = field(k, i)
		}
		if !ok {
			return i, false
		}
		if i, empty, ok = jsonx.AfterMember(b, i, '}'); !ok {
			return i, false
		}
	}
	return i, true
}

// Key classes returned by the key matchers.
const (
	keyUnknown = 254 // not a field of the struct: its value is skipped
	keyFolded  = 255 // matches a field only case-insensitively: bail out
)

// Top-level fields.
const (
	topChoices = iota
	topUsage
	topError
)

// The field names of each object, indexed by the constants above.
var (
	topNames     = []string{topChoices: "choices", topUsage: "usage", topError: "error"}
	choiceNames  = []string{choiceDelta: "delta", choiceMessage: "message", choiceText: "text"}
	messageNames = []string{msgContent: "content", msgReasoningContent: "reasoning_content", msgReasoning: "reasoning"}
	usageNames   = []string{usagePrompt: "prompt_tokens", usageCompletion: "completion_tokens", usageTotal: "total_tokens",
		usagePromptDetails: "prompt_tokens_details", usageCompletionDetails: "completion_tokens_details"}
	cachedNames    = []string{"cached_tokens"}
	reasoningNames = []string{"reasoning_tokens"}
)

// matchKey returns the index of the name k equals, keyFolded when k
// equals one only up to ASCII case (encoding/json would still match it),
// else keyUnknown.
func matchKey(k []byte, names []string) uint8 {
	folded := false
	for j, n := range names {
		if len(n) != len(k) {
			continue
		}
		if string(k) == n {
			return uint8(j)
		}
		folded = folded || equalFoldASCII(k, n)
	}
	if folded {
		return keyFolded
	}
	return keyUnknown
}

func equalFoldASCII(a []byte, b string) bool {
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// scanChoices reads the value of "choices": null or an array whose
// elements are null or objects.
func scanChoices(b []byte, i int, s *completionScan, lt *liveText) (int, bool) {
	if jsonx.HasLiteral(b, i, "null") {
		return i + 4, true
	}
	if i >= len(b) || b[i] != '[' {
		return i, false
	}
	i = jsonx.SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		switch {
		case jsonx.HasLiteral(b, i, "null"):
			i += 4
		case i < len(b) && b[i] == '{':
			if i, ok = scanChoice(b, i, s, lt); !ok {
				return i, false
			}
		default:
			return i, false
		}
		i = jsonx.SkipSpace(b, i)
		if i >= len(b) {
			return i, false
		}
		if b[i] == ']' {
			return i + 1, true
		}
		if b[i] != ',' {
			return i, false
		}
		i = jsonx.SkipSpace(b, i+1)
	}
}

// Fields of a choice.
const (
	choiceDelta = iota
	choiceMessage
	choiceText
)

func scanChoice(b []byte, i int, s *completionScan, lt *liveText) (int, bool) {
	// The string literals of the delta and the message, and the text's.
	var dl, ml msgLits
	var text []byte
	j, ok := scanObject(b, i, false, choiceNames, scanDepthLimit-3, func(k uint8, i int) (int, bool) {
		switch k {
		case choiceDelta:
			return scanMessage(b, i, &s.deltaContent, &s.deltaReasoning, &dl)
		case choiceMessage:
			return scanMessage(b, i, &s.msgContent, &s.msgReasoning, &ml)
		default: // choiceText
			j, nonEmpty, ok := scanOptString(b, i)
			s.text = s.text || nonEmpty
			if nonEmpty {
				text = b[i:j]
			}
			return j, ok
		}
	})
	if !ok {
		return j, false
	}
	if lt == nil {
		return j, true
	}
	if dl.n > 0 {
		lt.deltaLits += dl.n
		lt.deltaLit = dl.last
		lt.deltaReasoning = dl.content == nil || &dl.last[0] != &dl.content[0]
	}
	if lt.dst != nil {
		// encoding/json fills the whole choice before the caller reads
		// it: content comes first, whatever the order of the keys.
		content := ml.content
		if lt.delta {
			content = dl.content
		}
		if len(content) > 2 {
			*lt.dst = jsonx.AppendUnquoted(*lt.dst, content)
		}
		if text != nil {
			*lt.dst = jsonx.AppendUnquoted(*lt.dst, text)
		}
	}
	return j, true
}

// Fields of a delta or message.
const (
	msgContent = iota
	msgReasoningContent
	msgReasoning
)

// scanMessage reads a delta or message object (or null), ORing into
// content and reasoning whether it has non-empty ones; lits gets its
// string literals.
func scanMessage(b []byte, i int, content, reasoning *bool, lits *msgLits) (int, bool) {
	return scanObject(b, i, true, messageNames, scanDepthLimit-5, func(k uint8, i int) (int, bool) {
		j, nonEmpty, ok := scanOptString(b, i)
		if ok && b[i] == '"' {
			lits.n++
			lits.last = b[i:j]
			if k == msgContent {
				lits.content = lits.last
			}
		}
		if k == msgContent {
			*content = *content || nonEmpty
		} else {
			*reasoning = *reasoning || nonEmpty
		}
		return j, ok
	})
}

// Fields of usage and of its details objects.
const (
	usagePrompt = iota
	usageCompletion
	usageTotal
	usagePromptDetails
	usageCompletionDetails
)

func scanUsage(b []byte, i int, s *completionScan) (int, bool) {
	if !jsonx.HasLiteral(b, i, "null") {
		s.hasUsage = true
	}
	u := &s.usage
	return scanObject(b, i, true, usageNames, scanDepthLimit-2, func(k uint8, i int) (int, bool) {
		switch k {
		case usagePrompt:
			return scanOptInt(b, i, &u.PromptTokens)
		case usageCompletion:
			return scanOptInt(b, i, &u.CompletionTokens)
		case usageTotal:
			return scanOptInt(b, i, &u.TotalTokens)
		case usagePromptDetails:
			return scanDetails(b, i, cachedNames, &u.CachedTokens, &u.HasCached)
		default: // usageCompletionDetails
			return scanDetails(b, i, reasoningNames, &u.ReasoningTokens, &u.HasReasoning)
		}
	})
}

// scanDetails reads a details object (or null) whose one known field,
// name[0], is an optional integer: *has reports whether it was a number.
func scanDetails(b []byte, i int, name []string, v *int, has *bool) (int, bool) {
	return scanObject(b, i, true, name, scanDepthLimit-3, func(_ uint8, i int) (int, bool) {
		if jsonx.HasLiteral(b, i, "null") {
			return i + 4, true
		}
		*has = true
		return scanOptInt(b, i, v)
	})
}

// readKey reads `"key" :` at b[i] and returns the key's bytes (between
// the quotes) and the index of the value. Keys with escapes or bytes
// ≥ 0x80 are refused (encoding/json would unescape or Unicode-fold them).
func readKey(b []byte, i int) (key []byte, j int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	j = i + 1
	for j < len(b) && jsonx.PlainASCII(b[j]) {
		j++
	}
	if j >= len(b) || b[j] != '"' {
		return nil, j, false
	}
	key = b[i+1 : j]
	j = jsonx.SkipSpace(b, j+1)
	if j >= len(b) || b[j] != ':' {
		return nil, j, false
	}
	return key, jsonx.SkipSpace(b, j+1), true
}

// scanOptString reads a string or null; nonEmpty is true for a string
// that decodes to at least one character (any escape does).
func scanOptString(b []byte, i int) (j int, nonEmpty, ok bool) {
	if jsonx.HasLiteral(b, i, "null") {
		return i + 4, false, true
	}
	if i >= len(b) || b[i] != '"' {
		return i, false, false
	}
	j, ok = jsonx.ScanString(b, i)
	return j, ok && j-i > 2, ok
}

// scanOptInt reads an integer into *v, or null (which leaves *v as it is,
// as encoding/json does). A number with a fraction or exponent, or one
// outside int64, is refused (encoding/json reports a type error).
func scanOptInt(b []byte, i int, v *int) (int, bool) {
	if jsonx.HasLiteral(b, i, "null") {
		return i + 4, true
	}
	if i >= len(b) || (b[i] != '-' && (b[i] < '0' || b[i] > '9')) {
		return i, false
	}
	j, ok := jsonx.ScanNumber(b, i)
	if !ok {
		return j, false
	}
	neg := b[i] == '-'
	k := i
	if neg {
		k++
	}
	var n uint64
	for ; k < j; k++ {
		c := b[k]
		if c < '0' || c > '9' {
			return j, false // fraction or exponent
		}
		if n > (1<<63)/10 {
			return j, false
		}
		n = n*10 + uint64(c-'0')
		if n > 1<<63 {
			return j, false
		}
	}
	if !neg && n > 1<<63-1 {
		return j, false
	}
	if neg {
		*v = int(-int64(n)) // n ≤ 1<<63: -n fits, 1<<63 wraps to MinInt64
	} else {
		*v = int(n)
	}
	return j, true
}
