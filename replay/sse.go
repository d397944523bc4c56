package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/agentperf/agentperf/internal/jsonx"
	"github.com/agentperf/agentperf/metrics"
)

// maxSSELine bounds one SSE line; a longer line is a malformed stream.
const maxSSELine = 16 << 20

// errMalformed marks a response that is not valid SSE/JSON.
var errMalformed = errors.New("malformed response")

// sseEvent is what one `data:` line of a chat-completion stream carried.
type sseEvent struct {
	Done         bool // data: [DONE]
	Content      bool // non-empty delta.content
	Reasoning    bool // non-empty delta.reasoning_content / delta.reasoning
	HasUsage     bool // the event carried a usage object (Usage is it)
	Usage        metrics.Usage
	ErrorMessage []byte // the raw data of an error event (nil when none)
	// Fallback is set when the one-pass scan could not decide and the
	// event was decoded with encoding/json (counted per response in
	// Result.ResponseFallbacks).
	Fallback bool
}

// lineReader splits a stream into lines without allocating per line. The
// returned slice is valid until the next call.
type lineReader struct {
	r    io.Reader
	buf  []byte
	head int // start of unread data
	tail int // end of data
	err  error
}

func (lr *lineReader) reset(r io.Reader) {
	lr.r = r
	lr.head, lr.tail = 0, 0
	lr.err = nil
	if lr.buf == nil {
		lr.buf = make([]byte, 32<<10)
	}
}

// next returns the next line without its line terminator (\n or \r\n).
// At the end of the stream it returns the last unterminated line (if any),
// then io.EOF; after a read error, the error.
func (lr *lineReader) next() ([]byte, error) {
	for {
		if i := bytes.IndexByte(lr.buf[lr.head:lr.tail], '\n'); i >= 0 {
			line := lr.buf[lr.head : lr.head+i]
			lr.head += i + 1
			return bytes.TrimSuffix(line, []byte{'\r'}), nil
		}
		if lr.err != nil {
			// The unterminated last line of a stream that ended (EOF) is
			// a line; the piece of a line before a read error (a reset)
			// is not parsed: the stream failed there.
			if lr.head < lr.tail && lr.err == io.EOF {
				line := lr.buf[lr.head:lr.tail]
				lr.head = lr.tail
				return bytes.TrimSuffix(line, []byte{'\r'}), nil
			}
			return nil, lr.err
		}
		// Make room: compact, then grow if the line fills the buffer.
		if lr.head > 0 {
			n := copy(lr.buf, lr.buf[lr.head:lr.tail])
			lr.head, lr.tail = 0, n
		}
		if lr.tail == len(lr.buf) {
			if len(lr.buf) >= maxSSELine {
				return nil, fmt.Errorf("%w: SSE line longer than %d bytes", errMalformed, maxSSELine)
			}
			nb := make([]byte, 2*len(lr.buf))
			copy(nb, lr.buf[:lr.tail])
			lr.buf = nb
		}
		n, err := lr.r.Read(lr.buf[lr.tail:])
		lr.tail += n
		if err != nil {
			lr.err = err
		}
	}
}

var (
	dataPrefix = []byte("data:")
	doneMarker = []byte("[DONE]")
)

// parseSSELine interprets one line of an SSE stream. Lines that are not
// `data:` lines (comments, `event:`, `id:`, blank separators) return ok=false.
// When text is non-nil the decoded delta.content is appended to it (live
// assistant mode).
func parseSSELine(line []byte, text *[]byte) (ev sseEvent, ok bool, err error) {
	if !bytes.HasPrefix(line, dataPrefix) {
		return ev, false, nil
	}
	data := bytes.TrimSpace(line[len(dataPrefix):])
	if len(data) == 0 {
		return ev, false, nil
	}
	if bytes.Equal(data, doneMarker) {
		ev.Done = true
		return ev, true, nil
	}
	if data[0] != '{' {
		return ev, true, fmt.Errorf("%w: SSE data is not a JSON object: %.120q", errMalformed, data)
	}
	// One pass (scanCompletionText), or encoding/json where that cannot
	// decide. Either way the whole event is checked to be valid JSON, so a
	// malformed stream is reported rather than counted.
	var lt *liveText
	n := 0
	if text != nil {
		lt, n = &liveText{dst: text, delta: true}, len(*text)
	}
	if sc, ok := scanCompletionText(data, lt); ok {
		if sc.errorSet {
			if text != nil {
				*text = (*text)[:n]
			}
			ev.ErrorMessage = data
			return ev, true, nil
		}
		ev.Content = sc.deltaContent || sc.text
		ev.Reasoning = sc.deltaReasoning
		ev.HasUsage, ev.Usage = sc.hasUsage, sc.usage
		return ev, true, nil
	}
	if text != nil {
		*text = (*text)[:n]
	}
	ev, err = decodeSSEData(data, text)
	ev.Fallback = true
	return ev, true, err
}

// eventShape makes the content events of one stream cheap: servers send
// them all in one shape, the same bytes (id, object, created, model,
// index, logprobs, finish_reason) around a different delta.content (or
// reasoning) string. Once the full scan (scanCompletionText) decided an
// event whose deltas have exactly one string field, its bytes before and
// after that string are kept with its decision. An event that is those
// bytes around another single JSON string token is the same JSON object
// but for that string: it is valid exactly when the string token is, and
// it decides as the kept event did except for that field's emptiness
// and, for content, its text. Such an
// event costs two comparisons and a string scan instead of a parse; any
// other event is parsed in full (and may become the new shape).
// FuzzEventShape holds it to parseSSELine event by event.
type eventShape struct {
	prefix, suffix []byte
	// ev is the kept event's decision; reasoning says the string is a
	// reasoning field's, else it is the content.
	ev        sseEvent
	reasoning bool
	known     bool
	hits      int // events decided by the shape (tests)
}

func (sh *eventShape) reset() { sh.known = false }

// parse is parseSSELine with the stream's shape.
func (sh *eventShape) parse(line []byte, text *[]byte) (ev sseEvent, ok bool, err error) {
	if !bytes.HasPrefix(line, dataPrefix) {
		return ev, false, nil
	}
	data := bytes.TrimSpace(line[len(dataPrefix):])
	if sh.known && len(data) > len(sh.prefix)+len(sh.suffix) && bytes.HasPrefix(data, sh.prefix) && bytes.HasSuffix(data, sh.suffix) {
		lit := data[len(sh.prefix) : len(data)-len(sh.suffix)]
		if j, ok := jsonx.ScanString(lit, 0); ok && j == len(lit) {
			sh.hits++
			ev = sh.ev
			if sh.reasoning {
				ev.Reasoning = len(lit) > 2
				return ev, true, nil
			}
			ev.Content = len(lit) > 2
			if text != nil && ev.Content {
				*text = jsonx.AppendUnquoted(*text, lit)
			}
			return ev, true, nil
		}
	}
	if len(data) == 0 || data[0] != '{' {
		return parseSSELine(line, text)
	}
	n := 0
	if text != nil {
		n = len(*text)
	}
	lt := liveText{dst: text, delta: true}
	sc, ok := scanCompletionText(data, &lt)
	if !ok || sc.errorSet {
		if text != nil {
			*text = (*text)[:n]
		}
		return parseSSELine(line, text)
	}
	ev.Content = sc.deltaContent || sc.text
	ev.Reasoning = sc.deltaReasoning
	ev.HasUsage, ev.Usage = sc.hasUsage, sc.usage
	sh.known = lt.deltaLits == 1 && !sc.text
	if sh.known {
		off := cap(data) - cap(lt.deltaLit) // deltaLit is data[off:off+len]
		sh.prefix = append(sh.prefix[:0], data[:off]...)
		sh.suffix = append(sh.suffix[:0], data[off+len(lt.deltaLit):]...)
		sh.ev, sh.reasoning = ev, lt.deltaReasoning
	}
	return ev, true, nil
}

// decodeSSEData is the decision of parseSSELine on the JSON data of an
// event, made with encoding/json.
func decodeSSEData(data []byte, text *[]byte) (ev sseEvent, err error) {
	var chunk chunkJSON
	if err := json.Unmarshal(data, &chunk); err != nil {
		return ev, fmt.Errorf("%w: invalid JSON in SSE data: %v", errMalformed, err)
	}
	if chunk.hasError() {
		ev.ErrorMessage = data
		return ev, nil
	}
	for _, ch := range chunk.Choices {
		if ch.Delta.Content != "" {
			ev.Content = true
			if text != nil {
				*text = append(*text, ch.Delta.Content...)
			}
		}
		if ch.Delta.ReasoningContent != "" || ch.Delta.Reasoning != "" {
			ev.Reasoning = true
		}
		// Completions endpoint streams "text".
		if ch.Text != "" {
			ev.Content = true
			if text != nil {
				*text = append(*text, ch.Text...)
			}
		}
	}
	ev.Usage, ev.HasUsage = chunk.Usage.toMetrics()
	return ev, nil
}

type chunkJSON struct {
	Choices []struct {
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
		} `json:"delta"`
		Message struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
		} `json:"message"`
		Text string `json:"text"`
	} `json:"choices"`
	Usage *usageJSON      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// hasError reports whether the object had a top-level error other than
// null (json.RawMessage keeps a null as the bytes "null").
func (c *chunkJSON) hasError() bool {
	return len(c.Error) > 0 && string(c.Error) != "null"
}

type usageJSON struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens *int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens *int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u *usageJSON) toMetrics() (metrics.Usage, bool) {
	if u == nil {
		return metrics.Usage{}, false
	}
	m := metrics.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if d := u.PromptTokensDetails; d != nil && d.CachedTokens != nil {
		m.CachedTokens, m.HasCached = *d.CachedTokens, true
	}
	if d := u.CompletionTokensDetails; d != nil && d.ReasoningTokens != nil {
		m.ReasoningTokens, m.HasReasoning = *d.ReasoningTokens, true
	}
	return m, true
}

// fullResponse is what a non-streaming chat completion body carried.
type fullResponse struct {
	content, reasoning bool
	hasUsage           bool
	usage              metrics.Usage
	fallback           bool // decoded with encoding/json (see sseEvent.Fallback)
}

// errErrorObject marks a 200 response whose body is an error object.
var errErrorObject = errors.New("error object in 200 response")

// parseFullResponse interprets a non-streaming chat completion body: in
// one pass without allocating (scanCompletionText), or with encoding/json
// when that cannot decide. When text is not nil the live reply (content,
// then text, per choice) is appended to it.
func parseFullResponse(body []byte, text *[]byte) (r fullResponse, err error) {
	var lt *liveText
	n := 0
	if text != nil {
		lt, n = &liveText{dst: text}, len(*text)
	}
	if sc, ok := scanCompletionText(body, lt); ok {
		if sc.errorSet {
			if text != nil {
				*text = (*text)[:n]
			}
			return r, fmt.Errorf("%w: %s", errErrorObject, truncate(body, 512))
		}
		return fullResponse{content: sc.msgContent || sc.text, reasoning: sc.msgReasoning, hasUsage: sc.hasUsage, usage: sc.usage}, nil
	}
	if text != nil {
		*text = (*text)[:n]
	}
	r, err = decodeFullResponse(body, text)
	r.fallback = true
	return r, err
}

// decodeFullResponse is parseFullResponse with encoding/json.
func decodeFullResponse(body []byte, text *[]byte) (r fullResponse, err error) {
	var chunk chunkJSON
	if err := json.Unmarshal(body, &chunk); err != nil {
		return r, fmt.Errorf("%w: invalid JSON response body: %v", errMalformed, err)
	}
	if chunk.hasError() {
		return r, fmt.Errorf("%w: %s", errErrorObject, truncate(body, 512))
	}
	for _, ch := range chunk.Choices {
		if ch.Message.Content != "" || ch.Text != "" {
			r.content = true
			if text != nil {
				*text = append(*text, ch.Message.Content...)
				*text = append(*text, ch.Text...)
			}
		}
		if ch.Message.ReasoningContent != "" || ch.Message.Reasoning != "" {
			r.reasoning = true
		}
	}
	r.usage, r.hasUsage = chunk.Usage.toMetrics()
	return r, nil
}

// errorMessage extracts a readable message from an error body: the JSON
// error.message (or error when it is a string), else the raw text.
func errorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		if len(v.Error) > 0 {
			var s string
			if json.Unmarshal(v.Error, &s) == nil {
				return s
			}
			var o struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(v.Error, &o) == nil && o.Message != "" {
				return o.Message
			}
		}
		if v.Message != "" {
			return v.Message
		}
	}
	return string(truncate(body, 2048))
}

func truncate(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return append(append([]byte(nil), b[:n]...), "…(truncated "+strconv.Itoa(len(b)-n)+" bytes)"...)
}
