package dataset

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/agentperf/agentperf/internal/jsonx"
)

// This file holds the hand-written JSON scanner for weka traces. It parses
// one trace object straight into the Trace model: no intermediate maps, no
// reflection, hash_ids decoded digit by digit into shared uint32 chunks (a turn that
// extends the previous one shares its storage). It
// is a strict JSON parser (RFC 8259 grammar) that also enforces the schema:
// unknown or duplicated fields, wrong types and out-of-range values are
// errors that carry their JSON path.

const (
	maxNesting = 64      // subagent nesting and skipped-value depth limit
	slabChunk  = 1 << 18 // uint32s per hash-id slab allocation (1 MiB)
)

// parser is reused across traces of one read; it is not safe for concurrent
// use.
type parser struct {
	file string
	line int

	b []byte
	i int

	path    []pathSeg
	traceID string

	intern map[string]string
	strbuf []byte
	// Hash ids live in chunks: chunk[free:] is unused, and chunk[lastStart:
	// lastStart+lastLen] is the most recent array (lastLen 0: none), so an
	// array that extends it can share its storage.
	chunk              []uint32
	free               int
	lastStart, lastLen int
	reqs               [][]Request // per-depth scratch for request lists
	subs               [][]Subagent
	nesting            int
}

func newParser(file string) *parser {
	return &parser{file: file, intern: make(map[string]string, 64)}
}

// fail builds a *TraceError at the current position and path.
func (p *parser) fail(kind error, format string, args ...any) error {
	return p.failAt(p.i, kind, format, args...)
}

func (p *parser) failAt(off int, kind error, format string, args ...any) error {
	e := &TraceError{
		File:       p.file,
		Line:       p.line,
		Offset:     off,
		TraceID:    p.traceID,
		Request:    -1,
		Subrequest: -1,
		Field:      formatPath(p.path),
		Err:        kindf(kind, format, args...),
	}
	n := 0
	for _, s := range p.path {
		if s.name == "requests" && s.idx >= 0 {
			switch n {
			case 0:
				e.Request = s.idx
			case 1:
				e.Subrequest = s.idx
			}
			n++
		}
	}
	return e
}

func (p *parser) push(name string) { p.path = append(p.path, pathSeg{name: name, idx: -1}) }
func (p *parser) pop()             { p.path = p.path[:len(p.path)-1] }
func (p *parser) setIdx(i int)     { p.path[len(p.path)-1].idx = i }

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end of input.
func (p *parser) peek() byte {
	p.ws()
	if p.i >= len(p.b) {
		return 0
	}
	return p.b[p.i]
}

// describe names the byte c found at the parser's position for an error:
// 0 is the end of the input when the position is past it, else a NUL byte
// (a corpus of zeros used to be told "found end of input").
func (p *parser) describe(c byte) string {
	if c == 0 {
		if p.i >= len(p.b) {
			return "end of input"
		}
		return "a NUL byte (0x00: the file may be corrupt, or not text)"
	}
	if c < 0x20 || c >= 0x7f {
		return "byte " + strconv.Quote(string(rune(c)))
	}
	return strconv.Quote(string(c))
}

// typeErr reports a value of the wrong kind; a structural character or the
// end of input where a value belongs is malformed JSON instead.
func (p *parser) typeErr(c byte, format string, args ...any) error {
	switch c {
	case 0, ']', '}', ',', ':':
		return p.fail(ErrMalformedJSON, format, args...)
	}
	return p.fail(ErrWrongType, format, args...)
}

func (p *parser) expect(c byte) error {
	if got := p.peek(); got != c {
		return p.fail(ErrMalformedJSON, "expected %q, found %s", c, p.describe(got))
	}
	p.i++
	return nil
}

// isNull consumes a JSON null if one is next.
func (p *parser) isNull() (bool, error) {
	if p.peek() != 'n' {
		return false, nil
	}
	if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		return true, nil
	}
	return false, p.fail(ErrMalformedJSON, "invalid literal (expected null)")
}

// rawString reads a JSON string and returns its decoded bytes. The result
// aliases the input or p.strbuf and is valid until the next call.
func (p *parser) rawString() ([]byte, error) {
	if c := p.peek(); c != '"' {
		return nil, p.typeErr(c, "expected a string, found %s", p.describe(c))
	}
	p.i++
	start := p.i
	ascii := true
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			if !ascii && !utf8.Valid(s) {
				return nil, p.failAt(start, ErrMalformedJSON, "string is not valid UTF-8")
			}
			return s, nil
		case c == '\\':
			return p.escapedString(start)
		case c < 0x20:
			return nil, p.fail(ErrMalformedJSON, "%s in string (a control character must be escaped)", p.describe(c))
		case c >= 0x80:
			ascii = false
		}
		p.i++
	}
	return nil, p.fail(ErrMalformedJSON, "unterminated string")
}

// escapedString continues a string that contains escapes.
func (p *parser) escapedString(start int) ([]byte, error) {
	buf := append(p.strbuf[:0], p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			p.strbuf = buf
			if !utf8.Valid(buf) {
				return nil, p.failAt(start, ErrMalformedJSON, "string is not valid UTF-8")
			}
			return buf, nil
		case c < 0x20:
			return nil, p.fail(ErrMalformedJSON, "%s in string (a control character must be escaped)", p.describe(c))
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		// escape
		var ok bool
		if buf, p.i, ok = jsonx.AppendUnescaped(buf, p.b, p.i); !ok {
			switch {
			case p.i+1 >= len(p.b):
				return nil, p.fail(ErrMalformedJSON, "unterminated string")
			case p.b[p.i+1] == 'u':
				return nil, p.failAt(p.i+2, ErrMalformedJSON, `invalid \u escape`)
			default:
				return nil, p.failAt(p.i+1, ErrMalformedJSON, "invalid escape %s", p.describe(p.b[p.i+1]))
			}
		}
	}
	return nil, p.fail(ErrMalformedJSON, "unterminated string")
}

// str reads a string value; short strings are interned (model names, types
// and stop reasons repeat on every request).
func (p *parser) str() (string, error) {
	b, err := p.rawString()
	if err != nil {
		return "", err
	}
	if len(b) > 64 {
		return string(b), nil
	}
	if s, ok := p.intern[string(b)]; ok {
		return s, nil
	}
	s := string(b)
	if len(p.intern) < 4096 {
		p.intern[s] = s
	}
	return s, nil
}

// optStr reads a string or null ("" for null).
func (p *parser) optStr() (string, error) {
	if null, err := p.isNull(); null || err != nil {
		return "", err
	}
	return p.str()
}

// strList reads an array of strings, or null (nil).
func (p *parser) strList() ([]string, error) {
	if null, err := p.isNull(); null || err != nil {
		return nil, err
	}
	if c := p.peek(); c != '[' {
		return nil, p.typeErr(c, "expected an array of strings, found %s", p.describe(c))
	}
	p.i++
	var out []string
	if p.peek() == ']' {
		p.i++
		return []string{}, nil
	}
	for k := 0; ; k++ {
		p.setIdx(k)
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		switch c := p.peek(); c {
		case ',':
			p.i++
		case ']':
			p.i++
			p.setIdx(-1)
			return out, nil
		default:
			return nil, p.fail(ErrMalformedJSON, "expected ',' or ']' in array, found %s", p.describe(c))
		}
	}
}

// number scans a JSON number and returns its text and whether it is an
// integer literal (no fraction, no exponent).
func (p *parser) number() ([]byte, bool, error) {
	c := p.peek()
	start := p.i
	if c != '-' && (c < '0' || c > '9') {
		return nil, false, p.typeErr(c, "expected a number, found %s", p.describe(c))
	}
	b := p.b
	i := p.i
	if b[i] == '-' {
		i++
	}
	if i >= len(b) || b[i] < '0' || b[i] > '9' {
		p.i = i
		return nil, false, p.fail(ErrMalformedJSON, "invalid number")
	}
	if b[i] == '0' {
		i++
		if i < len(b) && b[i] >= '0' && b[i] <= '9' {
			p.i = i
			return nil, false, p.fail(ErrMalformedJSON, "invalid number (leading zero)")
		}
	} else {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	isInt := true
	if i < len(b) && b[i] == '.' {
		isInt = false
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			p.i = i
			return nil, false, p.fail(ErrMalformedJSON, "invalid number (no digits after '.')")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		isInt = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			p.i = i
			return nil, false, p.fail(ErrMalformedJSON, "invalid number (no digits in exponent)")
		}
	}
	p.i = i
	return b[start:i], isInt, nil
}

// float reads a finite number.
func (p *parser) float() (float64, error) {
	start := p.i
	txt, _, err := p.number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(string(txt), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, p.failAt(start, ErrOutOfRange, "number %s is not a finite float64", txt)
	}
	return v, nil
}

// nonNegFloat reads a finite number ≥ 0.
func (p *parser) nonNegFloat() (float64, error) {
	start := p.i
	v, err := p.float()
	if err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, p.failAt(start, ErrOutOfRange, "expected a number ≥ 0, got %v", v)
	}
	return v, nil
}

// optFloat reads a finite number ≥ 0 or null (NaN).
func (p *parser) optFloat() (float64, error) {
	if null, err := p.isNull(); null || err != nil {
		return math.NaN(), err
	}
	return p.nonNegFloat()
}

// integer reads an integral number (integral floats such as 3.0 are
// accepted, as pydantic's lax mode does).
func (p *parser) integer() (int64, error) {
	start := p.i
	txt, isInt, err := p.number()
	if err != nil {
		return 0, err
	}
	if isInt {
		v, err := strconv.ParseInt(string(txt), 10, 64)
		if err != nil {
			return 0, p.failAt(start, ErrOutOfRange, "integer %s does not fit in 64 bits", txt)
		}
		return v, nil
	}
	f, err := strconv.ParseFloat(string(txt), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, p.failAt(start, ErrOutOfRange, "expected an integer, got %s", txt)
	}
	return int64(f), nil
}

// count reads a non-negative integer that fits in an int32-sized count.
func (p *parser) count() (int, error) {
	start := p.i
	v, err := p.integer()
	if err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, p.failAt(start, ErrOutOfRange, "expected a count ≥ 0, got %d", v)
	}
	if v > math.MaxInt32 {
		return 0, p.failAt(start, ErrOutOfRange, "count %d is larger than 2^31-1", v)
	}
	return int(v), nil
}

// optCount reads a count or null (0).
func (p *parser) optCount() (int, error) {
	if null, err := p.isNull(); null || err != nil {
		return 0, err
	}
	return p.count()
}

// hashIDs reads an array of hash ids. The ids are appended straight into
// the free tail of the shared slab, which the result then owns.
func (p *parser) hashIDs() ([]uint32, error) {
	if c := p.peek(); c != '[' {
		return nil, p.typeErr(c, "expected an array of hash ids, found %s", p.describe(c))
	}
	p.i++
	if p.peek() == ']' {
		p.i++
		return []uint32{}, nil
	}
	if len(p.chunk)-p.free < slabChunk/16 {
		p.chunk, p.free, p.lastLen = make([]uint32, slabChunk), 0, 0
	}
	ids := p.chunk[p.free:p.free:len(p.chunk)]
	b := p.b
	i := p.i
	for k := 0; ; k++ {
		// Fast path: 1–10 digits (no leading zero) right before ',' or ']'.
		start := i
		if i < len(b) {
			d := b[i] - '0'
			if d <= 9 && (d != 0 || i+1 >= len(b) || b[i+1]-'0' > 9) {
				v := uint64(d)
				i++
				for i < len(b) {
					d = b[i] - '0'
					if d > 9 {
						break
					}
					v = v*10 + uint64(d)
					i++
				}
				if i-start <= 10 && v <= math.MaxUint32 && i < len(b) {
					switch b[i] {
					case ',':
						ids = append(ids, uint32(v))
						i++
						continue
					case ']':
						ids = append(ids, uint32(v))
						p.i = i + 1
						return p.keep(ids), nil
					}
				}
			}
		}
		// Slow path: white space, other number forms, errors.
		p.i = start
		p.ws()
		start = p.i
		p.setIdx(k)
		x, err := p.integer()
		if err == nil {
			if x < 0 {
				err = p.failAt(start, ErrOutOfRange, "hash id %d is negative; hash ids are ≥ 0", x)
			} else if x > math.MaxUint32 {
				err = p.failAt(start, ErrOutOfRange, "hash id %d exceeds 2^32-1 (agentperf stores hash ids as uint32)", x)
			}
		}
		if err != nil {
			p.setIdx(-1)
			return nil, err
		}
		ids = append(ids, uint32(x))
		switch c := p.peek(); c {
		case ',':
			p.i++
			i = p.i
			p.setIdx(-1)
		case ']':
			p.i++
			p.setIdx(-1)
			return p.keep(ids), nil
		default:
			err := p.fail(ErrMalformedJSON, "expected ',' or ']' after hash id, found %s", p.describe(c))
			p.setIdx(-1)
			return nil, err
		}
	}
}

// keep finishes a hash-id array built by appending to chunk[free:free]. If
// it still lives in the chunk and starts with the whole previous array
// stored just before it (a conversation turn extending the last one, the
// common case), only its new tail is kept and it shares the previous
// array's storage; otherwise it is kept where it is. If append had to move
// it, it has its own array. Capacity is clipped so that appending to a
// returned slice can never clobber a neighbour; the slices are read-only
// by contract anyway.
func (p *parser) keep(ids []uint32) []uint32 {
	n := len(ids)
	if p.free >= len(p.chunk) || &ids[0] != &p.chunk[p.free] {
		p.lastLen = 0 // moved out by append
		return ids[:n:n]
	}
	ls, ll := p.lastStart, p.lastLen
	if ll > 0 && ls+ll == p.free && n >= ll && slices.Equal(ids[:ll], p.chunk[ls:ls+ll]) {
		copy(p.chunk[p.free:], ids[ll:])
		p.free += n - ll
		p.lastLen = n
		return p.chunk[ls : ls+n : ls+n]
	}
	p.lastStart, p.lastLen = p.free, n
	p.free += n
	return ids[:n:n]
}

// skipValue validates and skips any JSON value (used for "totals").
func (p *parser) skipValue(depth int) error {
	if depth > maxNesting {
		return p.fail(ErrMalformedJSON, "nesting deeper than %d", maxNesting)
	}
	switch c := p.peek(); {
	case c == '{':
		p.i++
		if p.peek() == '}' {
			p.i++
			return nil
		}
		for {
			if _, err := p.rawString(); err != nil {
				return err
			}
			if err := p.expect(':'); err != nil {
				return err
			}
			if err := p.skipValue(depth + 1); err != nil {
				return err
			}
			switch c := p.peek(); c {
			case ',':
				p.i++
			case '}':
				p.i++
				return nil
			default:
				return p.fail(ErrMalformedJSON, "expected ',' or '}' in object, found %s", p.describe(c))
			}
		}
	case c == '[':
		p.i++
		if p.peek() == ']' {
			p.i++
			return nil
		}
		for {
			if err := p.skipValue(depth + 1); err != nil {
				return err
			}
			switch c := p.peek(); c {
			case ',':
				p.i++
			case ']':
				p.i++
				return nil
			default:
				return p.fail(ErrMalformedJSON, "expected ',' or ']' in array, found %s", p.describe(c))
			}
		}
	case c == '"':
		_, err := p.rawString()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, err := p.number()
		return err
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(p.b)-p.i >= len(lit) && string(p.b[p.i:p.i+len(lit)]) == lit {
				p.i += len(lit)
				return nil
			}
		}
		return p.fail(ErrMalformedJSON, "invalid value starting with %s", p.describe(c))
	}
}

// objectKeys iterates over the keys of an object: it consumes '{', then for
// each member calls fn with the key (positioned at the value), and consumes
// the separators and the final '}'.
func (p *parser) object(what string, fn func(key []byte, keyOff int) error) error {
	if c := p.peek(); c != '{' {
		return p.typeErr(c, "expected %s (a JSON object), found %s", what, p.describe(c))
	}
	p.i++
	if p.peek() == '}' {
		p.i++
		return nil
	}
	for {
		off := p.i
		if c := p.peek(); c != '"' {
			return p.fail(ErrMalformedJSON, "expected a field name, found %s", p.describe(c))
		}
		key, err := p.rawString()
		if err != nil {
			return err
		}
		if err := p.expect(':'); err != nil {
			return err
		}
		p.ws()
		if err := fn(key, off); err != nil {
			return err
		}
		switch c := p.peek(); c {
		case ',':
			p.i++
		case '}':
			p.i++
			return nil
		default:
			return p.fail(ErrMalformedJSON, "expected ',' or '}' after a field, found %s", p.describe(c))
		}
	}
}
