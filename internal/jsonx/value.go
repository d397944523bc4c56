package jsonx

import (
	"fmt"
	"strconv"
)

// MaxDepth is the nesting encoding/json accepts: a document nested deeper
// is not one it decodes.
const MaxDepth = 10000

// OpenObject reads '{' at b[i] and the space after it: j is the first key
// (or past the '}' of an empty object).
func OpenObject(b []byte, i int) (j int, empty, ok bool) {
	j = SkipSpace(b, i+1)
	if j < len(b) && b[j] == '}' {
		return j + 1, true, true
	}
	return j, false, j < len(b)
}

// AfterMember reads the ',' or closing byte after an object member or
// array element: j is the next member (after a ',') or past the closing
// byte (done).
func AfterMember(b []byte, i int, closing byte) (j int, done, ok bool) {
	i = SkipSpace(b, i)
	if i >= len(b) {
		return i, false, false
	}
	switch b[i] {
	case ',':
		return SkipSpace(b, i+1), false, true
	case closing:
		return i + 1, true, true
	}
	return i, false, false
}

// SkipValue skips one JSON value at b[i] (validating it) and returns the
// index after it. Nesting deeper than depth levels is refused.
func SkipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		if depth <= 0 {
			return i, false
		}
		closing := c + 2 // '}' is '{'+2, ']' is '['+2
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == closing {
			return i + 1, true
		}
		for {
			var ok bool
			if c == '{' {
				if i, ok = readAnyKey(b, i); !ok {
					return i, false
				}
			}
			if i, ok = SkipValue(b, i, depth-1); !ok {
				return i, false
			}
			var done bool
			if i, done, ok = AfterMember(b, i, closing); !ok {
				return i, false
			}
			if done {
				return i, true
			}
		}
	case c == '"':
		return ScanString(b, i)
	case c == '-' || (c >= '0' && c <= '9'):
		return ScanNumber(b, i)
	case c == 't':
		return i + 4, HasLiteral(b, i, "true")
	case c == 'f':
		return i + 5, HasLiteral(b, i, "false")
	case c == 'n':
		return i + 4, HasLiteral(b, i, "null")
	}
	return i, false
}

// readAnyKey reads `"key" :` and the space after it, whatever the key
// holds, and returns the index of the member's value.
func readAnyKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	j, ok := ScanString(b, i)
	if !ok {
		return j, false
	}
	j = SkipSpace(b, j)
	if j >= len(b) || b[j] != ':' {
		return j, false
	}
	return SkipSpace(b, j+1), true
}

// SyntaxError is invalid JSON at a byte offset.
type SyntaxError struct {
	Offset int // of the offending byte (len of the input when it ended early)
	Msg    string
}

func (e *SyntaxError) Error() string {
	return "invalid JSON at byte " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// Syntax returns the SyntaxError for b at i: what was expected, and what
// stands there.
func Syntax(b []byte, i int, expected string) *SyntaxError {
	if i >= len(b) {
		return &SyntaxError{Offset: len(b), Msg: "expected " + expected + ", found the end of the text"}
	}
	return &SyntaxError{Offset: i, Msg: fmt.Sprintf("expected %s, found %q", expected, Excerpt(b[i:]))}
}

// Excerpt is the start of b, at most 24 bytes, for an error message.
func Excerpt(b []byte) []byte {
	if len(b) > 24 {
		return b[:24]
	}
	return b
}

// EachMember reads the object at b[i] (space before it already skipped):
// for each member it calls member with the key as written (between the
// quotes, escapes not resolved) and the index of the value, which member
// reads and returns the index after. It returns the index after the
// object, or the first error (a *SyntaxError, or member's).
func EachMember(b []byte, i int, member func(key []byte, i int) (int, error)) (int, error) {
	if i >= len(b) || b[i] != '{' {
		return i, Syntax(b, i, "an object")
	}
	i, done, ok := OpenObject(b, i)
	if !ok {
		return i, Syntax(b, i, "a key or '}'")
	}
	for !done {
		if i >= len(b) || b[i] != '"' {
			return i, Syntax(b, i, "a key")
		}
		j, ok := ScanString(b, i)
		if !ok {
			return j, Syntax(b, j, "a valid string")
		}
		key := b[i+1 : j-1]
		j = SkipSpace(b, j)
		if j >= len(b) || b[j] != ':' {
			return j, Syntax(b, j, "':' after a key")
		}
		var err error
		if i, err = member(key, SkipSpace(b, j+1)); err != nil {
			return i, err
		}
		if i, done, ok = AfterMember(b, i, '}'); !ok {
			return i, Syntax(b, i, "',' or '}'")
		}
	}
	return i, nil
}
