package sim

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// respPool holds response buffers (a 40-token stream is about 8 KB).
var respPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// responder writes one completion response, streaming or not, and applies
// the mid-stream faults.
type responder struct {
	s         *Server
	w         http.ResponseWriter
	chat      bool
	req       *completionRequest
	seq       *seq
	e         *engine
	reqID     string // X-Request-ID, may be empty
	n         int64  // completion request number
	midFault  int    // fault index applied once faultAt tokens were sent, or -1
	faultAt   int
	faultDone bool
	wordBase  uint64
	reasoning int // the first reasoning tokens are reasoning_content

	head      []byte // {"id":…,"object":…,"created":…,"model":…
	buf       []byte
	sent      int
	roleSent  bool
	firstPend bool      // a first content chunk is buffered, not yet flushed
	firstTok  time.Time // when the first content was flushed
}

func (rw *responder) serve(ctx context.Context) {
	s := rw.s
	id := rw.reqID
	if id == "" {
		id = strconv.FormatInt(rw.n, 16)
	}
	object := "text_completion"
	idPrefix := "cmpl-"
	if rw.chat {
		object, idPrefix = "chat.completion", "chatcmpl-"
		if rw.req.Stream {
			object = "chat.completion.chunk"
		}
	}
	h := append(make([]byte, 0, 160), `{"id":`...)
	h = append(h, jsonString(idPrefix+id)...)
	h = append(h, `,"object":"`...)
	h = append(h, object...)
	h = append(h, `","created":`...)
	h = strconv.AppendInt(h, rw.seq.arrival.Unix(), 10)
	h = append(h, `,"model":`...)
	h = append(h, jsonString(s.cfg.Model)...)
	rw.head = h
	bp := respPool.Get().(*[]byte)
	rw.buf = (*bp)[:0]
	defer func() {
		if cap(rw.buf) <= 1<<20 {
			*bp = rw.buf[:0]
			respPool.Put(bp)
		}
	}()

	if s.cfg.ZeroLatency {
		rw.e.beginZeroLatency(rw.seq)
		var gen int
		if rw.req.Stream {
			gen = rw.streamZero(ctx)
		} else {
			gen = rw.whole(ctx)
		}
		rw.e.endZeroLatency(rw.seq, gen, rw.firstTok, time.Now())
		return
	}
	rw.e.submit(rw.seq)
	if rw.req.Stream {
		rw.streamTimed(ctx)
	} else {
		rw.whole(ctx)
	}
}

// wait blocks until the engine signals progress; false when the client
// left (the sequence is then aborted).
func (rw *responder) wait(ctx context.Context) bool {
	select {
	case <-rw.seq.notify:
		return true
	case <-ctx.Done():
		rw.e.abort(rw.seq)
		return false
	}
}

func (rw *responder) startStream() {
	hd := rw.w.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	hd.Set("Cache-Control", "no-cache")
	// Always chunked, as uvicorn streams vLLM's SSE (net/http would send a
	// Content-Length for a short response written at once).
	hd.Set("Transfer-Encoding", "chunked")
	rw.w.WriteHeader(http.StatusOK)
}

// flush writes the buffer and flushes the connection; false on a write
// error (client gone).
func (rw *responder) flush(toWire bool) bool {
	if len(rw.buf) > 0 {
		if _, err := rw.w.Write(rw.buf); err != nil {
			return false
		}
		rw.buf = rw.buf[:0]
	}
	if toWire {
		if f, ok := rw.w.(http.Flusher); ok {
			f.Flush()
		}
	}
	if rw.firstPend {
		rw.firstPend = false
		rw.firstTok = time.Now()
		rw.s.recordFirstByte(rw.reqID, rw.firstTok)
	}
	return true
}

// streamZero writes a whole SSE stream at once; returns tokens sent.
func (rw *responder) streamZero(ctx context.Context) int {
	rw.startStream()
	if !rw.emit(ctx, rw.seq.maxOut, false) {
		return rw.sent
	}
	rw.tail()
	rw.flush(false)
	return rw.sent
}

// streamTimed writes SSE chunks as the engine produces tokens.
func (rw *responder) streamTimed(ctx context.Context) {
	rw.startStream()
	if f, ok := rw.w.(http.Flusher); ok {
		f.Flush() // headers go out at once, as with vLLM
	}
	chunk := rw.s.cfg.TokensPerChunk
	for {
		if !rw.wait(ctx) {
			return
		}
		done := rw.seq.done.Load()
		gen := int(rw.seq.generated.Load())
		upTo := gen
		if !done {
			upTo = rw.sent + (gen-rw.sent)/chunk*chunk
		}
		if upTo > rw.sent {
			if !rw.emit(ctx, upTo, true) {
				rw.e.abort(rw.seq)
				return
			}
			if !rw.flush(true) {
				rw.e.abort(rw.seq)
				return
			}
		}
		if done {
			break
		}
	}
	rw.tail()
	rw.flush(true)
}

// emit appends content chunks for tokens [sent, upTo), writing through
// when the buffer grows, and fires a mid-stream fault once faultAt tokens
// were sent. It returns false when the stream was terminated (reset, error
// event, client gone). live flushes before stalls.
func (rw *responder) emit(ctx context.Context, upTo int, live bool) bool {
	chunk := rw.s.cfg.TokensPerChunk
	for rw.sent < upTo {
		if rw.chat && !rw.roleSent {
			rw.roleSent = true
			rw.buf = append(rw.buf, "data: "...)
			rw.buf = append(rw.buf, rw.head...)
			rw.buf = append(rw.buf, `,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
		}
		end := min(rw.sent+chunk, upTo)
		if rw.sent < rw.reasoning {
			end = min(end, rw.reasoning)
		}
		rw.appendChunk(rw.sent, end)
		if rw.sent == 0 {
			rw.firstPend = true
		}
		rw.sent = end
		if len(rw.buf) >= 16<<10 && !rw.flush(false) {
			return false
		}
		if rw.midFault >= 0 && !rw.faultDone && rw.sent >= rw.faultAt {
			rw.faultDone = true
			if !rw.midStreamFault(ctx) {
				return false
			}
		}
	}
	return true
}

// midStreamFault applies the request's mid-stream fault; false when it
// ends the stream.
func (rw *responder) midStreamFault(ctx context.Context) bool {
	rw.s.countFault(rw.midFault)
	switch rw.midFault {
	case fiResetMidStream:
		rw.flush(true)
		hijackReset(rw.w)
		return false
	case fiStall:
		if !rw.flush(true) {
			return false
		}
		return sleepCtx(ctx, rw.s.cfg.Faults.StallFor)
	case fiMalformedSSE:
		rw.buf = append(rw.buf, "data: "...)
		rw.buf = append(rw.buf, rw.head[:len(rw.head)/2]...)
		rw.buf = append(rw.buf, "\n\n"...)
	case fiStreamError:
		rw.buf = append(rw.buf, "data: "...)
		rw.buf = append(rw.buf, errorEnvelope(true, "simulated engine error (agentperf sim fault injection)", "InternalServerError", nil, 500)...)
		rw.buf = append(rw.buf, "\n\ndata: [DONE]\n\n"...)
		rw.flush(true)
		return false
	}
	return true
}

func (rw *responder) finishReason() string {
	if rw.seq.reason.Load() == finishStop {
		return `"stop"`
	}
	return `"length"`
}

// appendChunk appends one SSE event with tokens [from, to).
func (rw *responder) appendChunk(from, to int) {
	b := append(rw.buf, "data: "...)
	b = append(b, rw.head...)
	last := to == rw.seq.maxOut
	fr := "null"
	if last {
		fr = rw.finishReason()
	}
	if rw.chat {
		if from < rw.reasoning {
			b = append(b, `,"choices":[{"index":0,"delta":{"reasoning_content":"`...)
		} else {
			b = append(b, `,"choices":[{"index":0,"delta":{"content":"`...)
		}
		b = appendWords(b, rw.wordBase, from, to)
		b = append(b, `"},"logprobs":null,"finish_reason":`...)
		b = append(b, fr...)
		b = append(b, "}]}\n\n"...)
	} else {
		b = append(b, `,"choices":[{"index":0,"text":"`...)
		b = appendWords(b, rw.wordBase, from, to)
		b = append(b, `","logprobs":null,"finish_reason":`...)
		b = append(b, fr...)
		b = append(b, `,"stop_reason":null}]}`+"\n\n"...)
	}
	rw.buf = b
}

// includeUsage reports whether the final usage chunk is due.
func (rw *responder) includeUsage() bool {
	return rw.req.StreamOptions != nil && rw.req.StreamOptions.IncludeUsage &&
		rw.midFault != fiMissingUsage
}

// tail appends the usage chunk (if due) and [DONE].
func (rw *responder) tail() {
	if rw.midFault >= 0 && !rw.faultDone {
		rw.faultDone = true
		if rw.midFault == fiMissingUsage {
			rw.s.countFault(rw.midFault)
		}
	}
	if rw.includeUsage() {
		rw.buf = append(rw.buf, "data: "...)
		rw.buf = append(rw.buf, rw.head...)
		rw.buf = append(rw.buf, `,"choices":[],"usage":`...)
		rw.buf = rw.appendUsage(rw.buf)
		rw.buf = append(rw.buf, "}\n\n"...)
	}
	rw.buf = append(rw.buf, "data: [DONE]\n\n"...)
	rw.s.cnt.completed.Add(1)
}

func (rw *responder) appendUsage(b []byte) []byte {
	return appendUsage(b, rw.seq.promptLen, rw.sent, int(rw.seq.cached.Load()), min(rw.reasoning, rw.sent))
}

// whole serves a non-streaming response once all tokens exist; returns
// tokens sent.
func (rw *responder) whole(ctx context.Context) int {
	s := rw.s
	if !s.cfg.ZeroLatency {
		for !rw.seq.done.Load() {
			if !rw.wait(ctx) {
				return 0
			}
		}
	}
	out := rw.seq.maxOut
	fault := rw.midFault
	if fault >= 0 {
		s.countFault(fault)
	}
	if fault == fiStreamError {
		s.writeError(rw.w, http.StatusInternalServerError, "InternalServerError", "simulated engine error (agentperf sim fault injection)", nil)
		return 0
	}
	rw.sent = out
	b := append(rw.buf, rw.head...)
	content := "null"
	reasoning := "null"
	if rw.chat {
		if rw.reasoning > 0 {
			reasoning = `"` + string(appendWords(nil, rw.wordBase, 0, rw.reasoning)) + `"`
		}
		if rw.reasoning < out {
			content = `"` + string(appendWords(nil, rw.wordBase, rw.reasoning, out)) + `"`
		}
		b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
		b = append(b, content...)
		b = append(b, `,"reasoning_content":`...)
		b = append(b, reasoning...)
		b = append(b, `,"tool_calls":[]},"logprobs":null,"finish_reason":`...)
		b = append(b, rw.finishReason()...)
		b = append(b, `,"stop_reason":null}]`...)
	} else {
		b = append(b, `,"choices":[{"index":0,"text":"`...)
		b = appendWords(b, rw.wordBase, 0, out)
		b = append(b, `","logprobs":null,"finish_reason":`...)
		b = append(b, rw.finishReason()...)
		b = append(b, `,"stop_reason":null,"prompt_logprobs":null}]`...)
	}
	if fault != fiMissingUsage {
		b = append(b, `,"usage":`...)
		b = rw.appendUsage(b)
	}
	b = append(b, "}"...)
	if fault == fiMalformedSSE {
		b = b[:len(b)/2]
	}
	hd := rw.w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	rw.w.WriteHeader(http.StatusOK)
	switch fault {
	case fiResetMidStream, fiStall:
		half := len(b) / 2
		rw.w.Write(b[:half])
		if f, ok := rw.w.(http.Flusher); ok {
			f.Flush()
		}
		if fault == fiResetMidStream {
			hijackReset(rw.w)
			return out / 2
		}
		if !sleepCtx(ctx, s.cfg.Faults.StallFor) {
			return out / 2
		}
		rw.w.Write(b[half:])
	default:
		rw.firstPend = true
		rw.buf = b
		rw.flush(false)
	}
	s.cnt.completed.Add(1)
	return out
}
