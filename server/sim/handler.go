package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// maxBodyBytes bounds a request body (a 128k-token prompt is ~600 KB).
const maxBodyBytes = 64 << 20

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// pickFault returns the index (into faultNames) of the fault for
// completion request number n, or -1. Every-N rules count requests from 1;
// rates use a hash of (seed, n, rule) so the choice does not depend on
// arrival order between concurrent requests.
func (s *Server) pickFault(n int64) int {
	if n <= int64(s.cfg.Faults.After) {
		return -1
	}
	for i, r := range s.rules {
		if !r.enabled() {
			continue
		}
		if r.Every > 0 && n%int64(r.Every) == 0 {
			return i + 1
		}
		if r.Rate > 0 {
			x := mix64(uint64(s.cfg.Seed)*0x9e3779b97f4a7c15 ^ uint64(n)*0xd1b54a32d192ed03 ^ uint64(i+1)*0x8cb92ba72f3d8dd7)
			if float64(x>>11)/(1<<53) < r.Rate {
				return i + 1
			}
		}
	}
	return -1
}

func (s *Server) countFault(i int) {
	s.cnt.faults[i].Add(1)
	s.logf("sim: injecting fault %s", faultNames[i])
}

// writeError writes an error body in the configured envelope.
func (s *Server) writeError(w http.ResponseWriter, status int, typ, msg string, param *string) {
	body := errorEnvelope(s.wording.nested, msg, typ, param, status)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// hijackReset resets the request's connection with a TCP RST. When the
// connection cannot be hijacked (HTTP/2) it panics with
// http.ErrAbortHandler, which makes net/http drop the stream, the closest
// equivalent.
func hijackReset(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			resetConn(c)
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// serveCompletion serves POST /v1/chat/completions (chat) and
// /v1/completions.
func (s *Server) serveCompletion(w http.ResponseWriter, r *http.Request, chat bool) {
	arrival := time.Now()
	n := s.reqSeq.Add(1)
	s.cnt.requests.Add(1)
	var logged *RequestLogEntry // Config.RequestLog's line, written when the request ends
	if s.cfg.RequestLog != nil {
		logged = &RequestLogEntry{N: n, ArrivalNs: arrival.UnixNano(), RequestID: r.Header.Get("X-Request-ID"),
			CorrelationID: r.Header.Get("X-Correlation-ID"), PromptTokens: -1, ContentTokens: -1}
		defer s.logRequest(logged)
	}
	status := func(code int) {
		if logged != nil {
			logged.Status = code
		}
	}
	if s.goneDown(n, arrival) {
		s.countFault(fiDown)
		io.Copy(io.Discard, io.LimitReader(r.Body, maxBodyBytes))
		hijackReset(w)
		return
	}

	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bodyPool.Put(buf)
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, maxBodyBytes+1)); err != nil {
		return // client gone
	}
	if buf.Len() > maxBodyBytes {
		s.cnt.badRequests.Add(1)
		status(http.StatusRequestEntityTooLarge)
		s.writeError(w, http.StatusRequestEntityTooLarge, "BadRequestError", "request body larger than 64 MiB", nil)
		return
	}

	fault := s.pickFault(n)
	if s.failEarly(w, fault, status) {
		return
	}
	var req completionRequest
	if !s.decodeRequest(w, buf.Bytes(), &req, status) {
		return
	}
	p, hashes, promptHash, ok := s.promptOf(w, &req, chat, status)
	if !ok {
		return
	}
	if logged != nil {
		logged.PromptTokens, logged.ContentTokens = p, req.contentTokens
	}
	sq, ok := s.newSeq(w, &req, p, hashes, promptHash, arrival, status)
	if !ok {
		return
	}

	if fault == fiSlowFirstByte {
		s.countFault(fault)
		if !sleepCtx(r.Context(), s.cfg.Faults.SlowFirstByteFor) {
			return
		}
	}
	midFault := -1
	if fault >= fiResetMidStream {
		midFault = fault
	}

	e := s.pickEngine(r)
	rw := &responder{
		s: s, w: w, chat: chat, req: &req, seq: sq, e: e, n: n,
		reqID:     r.Header.Get("X-Request-ID"),
		midFault:  midFault,
		faultAt:   max(1, sq.maxOut/2),
		wordBase:  promptHash,
		reasoning: int(math.Floor(s.cfg.ReasoningRatio * float64(sq.maxOut))),
	}
	if !chat {
		rw.reasoning = 0
	}
	status(http.StatusOK)
	rw.serve(r.Context())
	if logged != nil {
		logged.FirstByteNs = unixNs(rw.firstTok)
	}
}

// goneDown reports whether the server is down (the down fault) for
// request n arriving at arrival; request DownAfterRequests+1 takes it down.
// Every later request passes through the same Once too: one that arrives
// while the request that tripped it has not yet stored the window must
// still find the server down.
func (s *Server) goneDown(n int64, arrival time.Time) bool {
	f := &s.cfg.Faults
	if f.DownAfterRequests > 0 && n > int64(f.DownAfterRequests) {
		s.downOnce.Do(func() {
			s.downUntil.Store(arrival.Add(f.DownFor).UnixNano())
			s.logf("sim: down for %v (fault down after %d requests)", f.DownFor, f.DownAfterRequests)
		})
	}
	return s.isDown(arrival)
}

// failEarly answers with the faults that come before the body is read
// (an error status, a reset before the headers) and reports whether it
// did.
func (s *Server) failEarly(w http.ResponseWriter, fault int, status func(int)) bool {
	switch fault {
	case fi500, fi503, fi429:
		s.countFault(fault)
		code := map[int]int{fi500: 500, fi503: 503, fi429: 429}[fault]
		typ := map[int]string{fi500: "InternalServerError", fi503: "ServiceUnavailableError", fi429: "RateLimitError"}[fault]
		if code != 500 {
			w.Header().Set("Retry-After", "1")
		}
		status(code)
		s.writeError(w, code, typ, "simulated "+strconv.Itoa(code)+" (agentperf sim fault injection)", nil)
		return true
	case fiResetBeforeHeaders:
		s.countFault(fault)
		hijackReset(w)
		return true
	}
	return false
}

// decodeRequest decodes body into req and checks the model, answering
// with the error when it fails.
func (s *Server) decodeRequest(w http.ResponseWriter, body []byte, req *completionRequest, status func(int)) bool {
	if err := json.Unmarshal(body, req); err != nil {
		s.cnt.badRequests.Add(1)
		status(http.StatusBadRequest)
		s.writeError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON body: "+err.Error(), nil)
		return false
	}
	if req.Model != "" && req.Model != s.cfg.Model {
		s.cnt.notFound.Add(1)
		model := "model"
		status(http.StatusNotFound)
		s.writeError(w, http.StatusNotFound, "NotFoundError", "The model `"+req.Model+"` does not exist.", &model)
		return false
	}
	return true
}

// promptOf tokenizes the prompt of req and returns its length, the
// chained hashes of its full blocks and a hash of the whole prompt (which
// seeds the output), answering with the error when it cannot.
func (s *Server) promptOf(w http.ResponseWriter, req *completionRequest, chat bool, status func(int)) (p int, hashes []uint64, promptHash uint64, ok bool) {
	idsp := idsPool.Get().(*[]uint32)
	ids, err := s.promptTokens((*idsp)[:0], req, chat)
	defer func() {
		*idsp = ids
		idsPool.Put(idsp)
	}()
	if err != nil {
		s.cnt.badRequests.Add(1)
		status(http.StatusBadRequest)
		s.writeError(w, http.StatusBadRequest, "BadRequestError", err.Error(), nil)
		return 0, nil, 0, false
	}
	hashes = blockHashes(nil, ids, s.cfg.BlockSize)
	ph := fnv.New64a()
	for _, t := range ids[len(hashes)*s.cfg.BlockSize:] {
		ph.Write([]byte{byte(t), byte(t >> 8), byte(t >> 16), byte(t >> 24)})
	}
	promptHash = ph.Sum64()
	if len(hashes) > 0 {
		promptHash ^= hashes[len(hashes)-1]
	}
	return len(ids), hashes, promptHash, true
}

// newSeq checks the output budget of a prompt of p tokens (max tokens,
// the context window) and returns the sequence to schedule, answering
// with the error (or the overflow) when the request is refused.
func (s *Server) newSeq(w http.ResponseWriter, req *completionRequest, p int, hashes []uint64, promptHash uint64, arrival time.Time, status func(int)) (*seq, bool) {
	mt, mGiven := 0, false
	if req.MaxCompletionTokens != nil {
		mt, mGiven = *req.MaxCompletionTokens, true
	} else if req.MaxTokens != nil {
		mt, mGiven = *req.MaxTokens, true
	}
	if mGiven && mt < 1 {
		s.cnt.badRequests.Add(1)
		param := "max_tokens"
		status(http.StatusBadRequest)
		s.writeError(w, http.StatusBadRequest, "BadRequestError", "max_tokens must be at least 1, got "+strconv.Itoa(mt)+".", &param)
		return nil, false
	}
	if body, over := overflowCheck(s.wording, s.cfg.MaxModelLen, p, mt, mGiven); over {
		s.cnt.overflows.Add(1)
		status(http.StatusBadRequest)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusBadRequest)
		w.Write(body)
		return nil, false
	}
	if !mGiven {
		mt = s.cfg.MaxModelLen - p
	}
	out := mt
	if !req.IgnoreEOS {
		out = 1 + int(mix64(uint64(s.cfg.Seed)^promptHash^uint64(mt)*0x9e3779b97f4a7c15)%uint64(mt))
	}
	sq := &seq{
		promptLen: p,
		hashes:    hashes,
		maxOut:    out,
		arrival:   arrival,
		notify:    make(chan struct{}, 1),
		chunk:     s.cfg.TokensPerChunk,
	}
	if !req.Stream {
		sq.chunk = math.MaxInt32 // wake the handler only when done
	}
	if out < mt {
		sq.reason.Store(finishStop)
	} else {
		sq.reason.Store(finishLength)
	}
	return sq, true
}

// pickEngine routes a request: by hash of X-Correlation-ID (hash routing)
// or round robin.
func (s *Server) pickEngine(r *http.Request) *engine {
	if len(s.engines) == 1 {
		return s.engines[0]
	}
	if s.cfg.Routing == "hash" {
		if id := r.Header.Get("X-Correlation-ID"); id != "" {
			h := fnv.New64a()
			io.WriteString(h, id)
			return s.engines[h.Sum64()%uint64(len(s.engines))]
		}
	}
	return s.engines[(s.rr.Add(1)-1)%uint64(len(s.engines))]
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
