package tokenizer

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// jsonScanner reads the two large parts of a tokenizer.json, model.vocab
// and model.merges, several times faster than encoding/json's reflection.
// Its input has already been validated by encoding/json (as a RawMessage),
// but it still checks everything it relies on and reports offsets.
type jsonScanner struct {
	data []byte
	i    int
}

func (s *jsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", s.i, fmt.Sprintf(format, args...))
}

func (s *jsonScanner) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte (0 at the end).
func (s *jsonScanner) peek() byte {
	s.ws()
	if s.i < len(s.data) {
		return s.data[s.i]
	}
	return 0
}

func (s *jsonScanner) expect(c byte) error {
	if s.peek() != c {
		return s.errorf("expected %q", c)
	}
	s.i++
	return nil
}

// str reads a JSON string.
func (s *jsonScanner) str() (string, error) {
	if s.peek() != '"' {
		return "", s.errorf("expected a string")
	}
	start := s.i + 1
	j := start
	for j < len(s.data) && s.data[j] != '"' && s.data[j] != '\\' && s.data[j] >= 0x20 {
		j++
	}
	if j < len(s.data) && s.data[j] == '"' && utf8.Valid(s.data[start:j]) {
		s.i = j + 1
		return string(s.data[start:j]), nil
	}
	// Escapes, control characters or invalid UTF-8: find the end and let
	// encoding/json decode this one string.
	for j < len(s.data) && s.data[j] != '"' {
		if s.data[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(s.data) {
		return "", s.errorf("unterminated string")
	}
	var out string
	if err := json.Unmarshal(s.data[s.i:j+1], &out); err != nil {
		return "", s.errorf("%v", err)
	}
	s.i = j + 1
	return out, nil
}

// uint reads a non-negative integer that fits in 32 bits.
func (s *jsonScanner) uint() (uint32, error) {
	s.ws()
	start := s.i
	var v uint64
	for s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9' {
		v = v*10 + uint64(s.data[s.i]-'0')
		if v > 1<<32-1 {
			return 0, s.errorf("number too large")
		}
		s.i++
	}
	if s.i == start {
		return 0, s.errorf("expected a non-negative integer")
	}
	if s.i < len(s.data) && (s.data[s.i] == '.' || s.data[s.i] == 'e' || s.data[s.i] == 'E') {
		return 0, s.errorf("expected an integer")
	}
	return uint32(v), nil
}

// scanVocab parses a JSON object of token → id.
func scanVocab(raw json.RawMessage) (map[string]uint32, error) {
	s := &jsonScanner{data: raw}
	if s.peek() == 'n' {
		return nil, nil
	}
	if err := s.expect('{'); err != nil {
		return nil, err
	}
	m := make(map[string]uint32, len(raw)/12)
	if s.peek() == '}' {
		return m, nil
	}
	for {
		k, err := s.str()
		if err != nil {
			return nil, err
		}
		if err := s.expect(':'); err != nil {
			return nil, err
		}
		v, err := s.uint()
		if err != nil {
			return nil, err
		}
		m[k] = v
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			return m, nil
		default:
			return nil, s.errorf("expected ',' or '}'")
		}
	}
}

// scanMerges parses merges in either format: ["a b", ...] or
// [["a", "b"], ...].
func scanMerges(raw json.RawMessage) ([][2]string, error) {
	s := &jsonScanner{data: raw}
	if s.peek() == 'n' {
		return nil, nil
	}
	if err := s.expect('['); err != nil {
		return nil, err
	}
	out := make([][2]string, 0, len(raw)/12)
	if s.peek() == ']' {
		return out, nil
	}
	for n := 0; ; n++ {
		var pair [2]string
		switch s.peek() {
		case '"':
			m, err := s.str()
			if err != nil {
				return nil, err
			}
			a, b, ok := cutMerge(m)
			if !ok {
				return nil, fmt.Errorf("model.merges[%d]: %q is not two tokens separated by one space", n, m)
			}
			pair = [2]string{a, b}
		case '[':
			s.i++
			for k := 0; k < 2; k++ {
				if k == 1 {
					if err := s.expect(','); err != nil {
						return nil, fmt.Errorf("model.merges[%d]: not a pair: %w", n, err)
					}
				}
				t, err := s.str()
				if err != nil {
					return nil, fmt.Errorf("model.merges[%d]: %w", n, err)
				}
				if t == "" {
					return nil, fmt.Errorf("model.merges[%d]: empty token", n)
				}
				pair[k] = t
			}
			if err := s.expect(']'); err != nil {
				return nil, fmt.Errorf("model.merges[%d]: not a pair: %w", n, err)
			}
		default:
			return nil, fmt.Errorf("model.merges[%d]: %w", n, s.errorf("neither \"a b\" nor [\"a\", \"b\"]"))
		}
		out = append(out, pair)
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			return out, nil
		default:
			return nil, s.errorf("expected ',' or ']'")
		}
	}
}
