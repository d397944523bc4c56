package dataset

import (
	"math"
	"strconv"
)

// Field bits for duplicate and presence checks.
const (
	fT uint32 = 1 << iota
	fType
	fModel
	fIn
	fOut
	fHashIDs
	fInputTypes
	fOutputTypes
	fStop
	fAPITime
	fThinkTime
	fTTFT
	fAgentID
	fSubagentType
	fDurationMs
	fTotalTokens
	fToolUseCount
	fStatus
	fModels
	fToolTokens
	fSystemTokens
	fRequests

	requestOnly  = fModel | fIn | fOut | fHashIDs | fInputTypes | fOutputTypes | fStop | fAPITime | fThinkTime | fTTFT
	subagentOnly = fAgentID | fSubagentType | fDurationMs | fTotalTokens | fToolUseCount | fStatus | fModels | fToolTokens | fSystemTokens | fRequests
)

// Trace-level field bits.
const (
	tID uint32 = 1 << iota
	tModels
	tBlockSize
	tScope
	tToolTokens
	tSystemTokens
	tRequests
	tTotals
)

// entry is the union of a request row and a subagent entry, filled before
// the "type" field (which may come last) says which one it is.
type entry struct {
	seen uint32
	typ  string
	req  Request
	sub  Subagent
}

// parseTrace parses one trace object occupying b (surrounding white space
// allowed, nothing else).
func (p *parser) parseTrace(b []byte) (Trace, error) {
	t, err := p.parseTraceAt(b, 0)
	if err != nil {
		return Trace{}, err
	}
	if c := p.peek(); c != 0 {
		return Trace{}, p.fail(ErrMalformedJSON, "unexpected %s after the trace object (one trace per line)", p.describe(c))
	}
	return t, nil
}

// parseTraceAt parses the trace object starting at b[start:]; on success
// p.i is just past it.
func (p *parser) parseTraceAt(b []byte, start int) (Trace, error) {
	p.b, p.i = b, start
	p.path = p.path[:0]
	p.traceID = ""
	p.nesting = 0
	var t Trace
	var seen uint32
	t.BlockSize = 64
	t.HashIDScope = "local"
	var blockOff, scopeOff = -1, -1
	dup := func(bit uint32, name string, off int) error {
		if seen&bit != 0 {
			return p.failAt(off, ErrMalformedJSON, "field %q appears twice", name)
		}
		seen |= bit
		return nil
	}
	err := p.object("a trace", func(key []byte, off int) error {
		var err error
		switch string(key) {
		case "id":
			if err = dup(tID, "id", off); err != nil {
				return err
			}
			p.push("id")
			t.ID, err = p.str()
			p.pop()
			if err == nil {
				if t.ID == "" {
					p.push("id")
					err = p.failAt(off, ErrOutOfRange, "trace id must not be empty")
					p.pop()
				}
				p.traceID = t.ID
			}
		case "models":
			if err = dup(tModels, "models", off); err != nil {
				return err
			}
			p.push("models")
			t.Models, err = p.strList()
			p.pop()
		case "block_size":
			if err = dup(tBlockSize, "block_size", off); err != nil {
				return err
			}
			p.push("block_size")
			blockOff = p.i
			var v int64
			v, err = p.integer()
			if err == nil && (v <= 0 || v > math.MaxInt32) {
				err = p.failAt(blockOff, ErrBlockSize, "block_size must be a positive integer, got %d", v)
			}
			t.BlockSize = int(v)
			p.pop()
		case "hash_id_scope":
			if err = dup(tScope, "hash_id_scope", off); err != nil {
				return err
			}
			p.push("hash_id_scope")
			scopeOff = p.i
			t.HashIDScope, err = p.str()
			p.pop()
		case "tool_tokens":
			if err = dup(tToolTokens, "tool_tokens", off); err != nil {
				return err
			}
			p.push("tool_tokens")
			t.ToolTokens, err = p.optCount()
			p.pop()
		case "system_tokens":
			if err = dup(tSystemTokens, "system_tokens", off); err != nil {
				return err
			}
			p.push("system_tokens")
			t.SystemTokens, err = p.optCount()
			p.pop()
		case "requests":
			if err = dup(tRequests, "requests", off); err != nil {
				return err
			}
			p.push("requests")
			t.Requests, t.Subagents, err = p.entries(0)
			p.pop()
		case "totals":
			if err = dup(tTotals, "totals", off); err != nil {
				return err
			}
			p.push("totals")
			err = p.skipValue(0) // accepted, not used (kv-cache-tester summary)
			p.pop()
		default:
			return p.failAt(off, ErrUnknownField, "field %s is not part of the weka trace schema (expected id, models, block_size, hash_id_scope, tool_tokens, system_tokens, requests, totals)", strconv.Quote(string(key)))
		}
		return err
	})
	if err != nil {
		return Trace{}, err
	}
	end := p.i
	defer func() { p.i = end }()
	switch {
	case seen&tID == 0:
		return Trace{}, p.failAt(-1, ErrMissingField, `required field "id" is absent`)
	case seen&tRequests == 0:
		return Trace{}, p.failAt(-1, ErrMissingField, `required field "requests" is absent`)
	case t.HashIDScope != "local":
		p.push("hash_id_scope")
		defer p.pop()
		return Trace{}, p.failAt(scopeOff, ErrHashIDScope, `hash_id_scope must be "local" (hash ids namespaced per trace), got %q`, t.HashIDScope)
	case len(t.Requests) == 0:
		p.push("requests")
		defer p.pop()
		return Trace{}, p.failAt(-1, ErrEmptyTrace, `expected at least one "n" or "s" request at the top level`)
	}
	shiftSubagents(t.Subagents)
	return t, nil
}

// shiftSubagents moves inner times that are relative to their entry (inner
// t earlier than the entry's t) onto the root timeline, recursively.
func shiftSubagents(ss []Subagent) {
	for i := range ss {
		s := &ss[i]
		for j := range s.Requests {
			if s.Requests[j].T < s.T {
				s.Requests[j].T += s.T
			}
		}
		for j := range s.Subagents {
			if s.Subagents[j].T < s.T {
				s.Subagents[j].T += s.T
			}
		}
		shiftSubagents(s.Subagents)
	}
}

// entries parses a "requests" array (top level at depth 0, subagent inner
// lists deeper) into requests and subagent entries.
func (p *parser) entries(depth int) ([]Request, []Subagent, error) {
	if depth >= maxNesting {
		return nil, nil, p.fail(ErrOutOfRange, "subagents nested deeper than %d", maxNesting)
	}
	if c := p.peek(); c != '[' {
		return nil, nil, p.typeErr(c, "expected an array of requests, found %s", p.describe(c))
	}
	p.i++
	for len(p.reqs) <= depth {
		p.reqs = append(p.reqs, nil)
		p.subs = append(p.subs, nil)
	}
	reqs := p.reqs[depth][:0]
	subs := p.subs[depth][:0]
	finish := func() ([]Request, []Subagent, error) {
		r := make([]Request, len(reqs))
		copy(r, reqs)
		var s []Subagent
		if len(subs) > 0 {
			s = make([]Subagent, len(subs))
			copy(s, subs)
		}
		// keep the (possibly grown) scratch, cleared of references
		clear(reqs)
		clear(subs)
		p.reqs[depth], p.subs[depth] = reqs[:0], subs[:0]
		return r, s, nil
	}
	if p.peek() == ']' {
		p.i++
		return finish()
	}
	for k := 0; ; k++ {
		p.setIdx(k)
		var e entry
		if err := p.entry(&e, depth); err != nil {
			return nil, nil, err
		}
		if e.typ == "subagent" {
			e.sub.After = len(reqs)
			subs = append(subs, e.sub)
		} else {
			reqs = append(reqs, e.req)
		}
		switch c := p.peek(); c {
		case ',':
			p.i++
		case ']':
			p.i++
			p.setIdx(-1)
			return finish()
		default:
			return nil, nil, p.fail(ErrMalformedJSON, "expected ',' or ']' after a request, found %s", p.describe(c))
		}
	}
}

var entryFieldNames = []struct {
	bit  uint32
	name string
}{
	{fT, "t"}, {fType, "type"}, {fModel, "model"}, {fIn, "in"}, {fOut, "out"},
	{fHashIDs, "hash_ids"}, {fInputTypes, "input_types"}, {fOutputTypes, "output_types"},
	{fStop, "stop"}, {fAPITime, "api_time"}, {fThinkTime, "think_time"}, {fTTFT, "ttft"},
	{fAgentID, "agent_id"}, {fSubagentType, "subagent_type"}, {fDurationMs, "duration_ms"},
	{fTotalTokens, "total_tokens"}, {fToolUseCount, "tool_use_count"}, {fStatus, "status"},
	{fModels, "models"}, {fToolTokens, "tool_tokens"}, {fSystemTokens, "system_tokens"},
	{fRequests, "requests"},
}

func fieldName(bit uint32) string {
	for _, f := range entryFieldNames {
		if f.bit == bit {
			return f.name
		}
	}
	return "?"
}

// entry parses one element of a requests array.
func (p *parser) entry(e *entry, depth int) error {
	e.req.APITime, e.req.ThinkTime, e.req.TTFT = math.NaN(), math.NaN(), math.NaN()
	e.sub.DurationMs = math.NaN()
	var fieldOff [32]int
	err := p.object("a request", func(key []byte, off int) error {
		var bit uint32
		var name string
		switch string(key) {
		case "t":
			bit, name = fT, "t"
		case "type":
			bit, name = fType, "type"
		case "model":
			bit, name = fModel, "model"
		case "in", "input_length":
			bit, name = fIn, "in"
			if len(key) > 2 {
				name = "input_length"
			}
		case "out", "output_length":
			bit, name = fOut, "out"
			if len(key) > 3 {
				name = "output_length"
			}
		case "hash_ids":
			bit, name = fHashIDs, "hash_ids"
		case "input_types":
			bit, name = fInputTypes, "input_types"
		case "output_types":
			bit, name = fOutputTypes, "output_types"
		case "stop":
			bit, name = fStop, "stop"
		case "api_time":
			bit, name = fAPITime, "api_time"
		case "think_time":
			bit, name = fThinkTime, "think_time"
		case "ttft":
			bit, name = fTTFT, "ttft"
		case "agent_id":
			bit, name = fAgentID, "agent_id"
		case "subagent_type":
			bit, name = fSubagentType, "subagent_type"
		case "duration_ms":
			bit, name = fDurationMs, "duration_ms"
		case "total_tokens":
			bit, name = fTotalTokens, "total_tokens"
		case "tool_use_count":
			bit, name = fToolUseCount, "tool_use_count"
		case "status":
			bit, name = fStatus, "status"
		case "models":
			bit, name = fModels, "models"
		case "tool_tokens":
			bit, name = fToolTokens, "tool_tokens"
		case "system_tokens":
			bit, name = fSystemTokens, "system_tokens"
		case "requests":
			bit, name = fRequests, "requests"
		default:
			return p.failAt(off, ErrUnknownField, "field %s is not part of a weka request or subagent entry", strconv.Quote(string(key)))
		}
		if e.seen&bit != 0 {
			switch bit {
			case fIn:
				return p.failAt(off, ErrMalformedJSON, "field %q appears twice (or together with its alias; in and input_length are one field)", name)
			case fOut:
				return p.failAt(off, ErrMalformedJSON, "field %q appears twice (or together with its alias; out and output_length are one field)", name)
			}
			return p.failAt(off, ErrMalformedJSON, "field %q appears twice", name)
		}
		e.seen |= bit
		fieldOff[bitIndex(bit)] = off
		p.push(name)
		defer p.pop()
		var err error
		switch bit {
		case fT:
			var v float64
			if v, err = p.nonNegFloat(); err == nil {
				e.req.T, e.sub.T = v, v
			}
		case fType:
			start := p.i
			if e.typ, err = p.str(); err == nil && e.typ != "n" && e.typ != "s" && e.typ != "subagent" {
				err = p.failAt(start, ErrOutOfRange, `expected "n", "s" or "subagent", got %q`, e.typ)
			}
			e.req.Type = e.typ
		case fModel:
			e.req.Model, err = p.optStr()
		case fIn:
			e.req.In, err = p.count()
		case fOut:
			e.req.Out, err = p.count()
		case fHashIDs:
			e.req.HashIDs, err = p.hashIDs()
		case fInputTypes:
			e.req.InputTypes, err = p.strList()
		case fOutputTypes:
			e.req.OutputTypes, err = p.strList()
		case fStop:
			e.req.Stop, err = p.optStr()
		case fAPITime:
			e.req.APITime, err = p.optFloat()
		case fThinkTime:
			e.req.ThinkTime, err = p.optFloat()
		case fTTFT:
			e.req.TTFT, err = p.optFloat()
		case fAgentID:
			e.sub.AgentID, err = p.optStr()
		case fSubagentType:
			e.sub.SubagentType, err = p.optStr()
		case fDurationMs:
			if null, nerr := p.isNull(); nerr != nil {
				err = nerr
			} else if !null {
				e.sub.DurationMs, err = p.float()
			}
		case fTotalTokens:
			e.sub.TotalTokens, err = p.optCount()
		case fToolUseCount:
			e.sub.ToolUseCount, err = p.optCount()
		case fStatus:
			e.sub.Status, err = p.optStr()
		case fModels:
			e.sub.Models, err = p.strList()
		case fToolTokens:
			e.sub.ToolTokens, err = p.optCount()
		case fSystemTokens:
			e.sub.SystemTokens, err = p.optCount()
		case fRequests:
			e.sub.Requests, e.sub.Subagents, err = p.entries(depth + 1)
		}
		return err
	})
	if err != nil {
		return err
	}
	var missing []string
	var extra uint32
	switch e.typ {
	case "":
		return p.failAt(-1, ErrMissingField, `required field "type" is absent (expected "n", "s" or "subagent")`)
	case "subagent":
		if e.seen&fT == 0 {
			missing = append(missing, "t")
		}
		extra = e.seen & requestOnly
		if e.sub.Requests == nil {
			e.sub.Requests = []Request{}
		}
	default:
		for _, f := range [...]uint32{fT, fIn, fOut, fHashIDs} {
			if e.seen&f == 0 {
				missing = append(missing, fieldName(f))
			}
		}
		extra = e.seen & subagentOnly
	}
	if len(missing) > 0 {
		return p.failAt(-1, ErrMissingField, "required field %q is absent in a %q entry", missing[0], e.typ)
	}
	if extra != 0 {
		// report the first offending field in file order
		bad, off := uint32(0), math.MaxInt
		for b := extra; b != 0; b &= b - 1 {
			bit := b & -b
			if o := fieldOff[bitIndex(bit)]; o < off {
				bad, off = bit, o
			}
		}
		return p.failAt(off, ErrUnknownField, "field %q is not allowed in a %q entry", fieldName(bad), e.typ)
	}
	return nil
}

func bitIndex(bit uint32) int {
	n := 0
	for bit > 1 {
		bit >>= 1
		n++
	}
	return n
}
