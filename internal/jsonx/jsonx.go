// Package jsonx holds the JSON string codec and the in-memory scanners
// shared by the request-body builder, the exporters, the response scanner
// and the hand-written parsers and decoders: append-style, no reflection,
// no allocation. AppendString is the one escaper; AppendUnescaped (one
// escape, validated, for parsers that report positions) and
// AppendUnquoted (a whole literal ScanString accepted) the unescapers.
package jsonx

import (
	"unicode/utf16"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// control characters, quotes and backslashes are escaped; < > & are left
// as they are (Python's json does not escape them either).
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = AppendStringBody(b, s)
	return append(b, '"')
}

// AppendStringBody appends s escaped as the body of a JSON string (without
// the quotes), by AppendString's rules.
func AppendStringBody(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"':
				b = append(b, '\\', '"')
			case '\\':
				b = append(b, '\\', '\\')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}

// AppendUnescaped decodes the escape sequence that starts at b[i] (a
// backslash inside a JSON string) and appends what it stands for to dst,
// as encoding/json decodes it: a surrogate that is not the first half of
// a valid pair becomes U+FFFD (the next escape is then left for the next
// call). It returns the index after the sequence. ok is false for a
// sequence that is not valid JSON: cut short, an unknown escape
// character, or a \u without four hex digits; next is then the index of
// the offending backslash (b[next+1] tells which, when next+1 < len(b)).
func AppendUnescaped(dst, b []byte, i int) (out []byte, next int, ok bool) {
	if i+1 >= len(b) {
		return dst, i, false
	}
	switch e := b[i+1]; e {
	case '"', '\\', '/':
		return append(dst, e), i + 2, true
	case 'b':
		return append(dst, '\b'), i + 2, true
	case 'f':
		return append(dst, '\f'), i + 2, true
	case 'n':
		return append(dst, '\n'), i + 2, true
	case 'r':
		return append(dst, '\r'), i + 2, true
	case 't':
		return append(dst, '\t'), i + 2, true
	case 'u':
	default:
		return dst, i, false
	}
	r, ok := hex4(b, i+2)
	if !ok {
		return dst, i, false
	}
	next = i + 6
	if utf16.IsSurrogate(r) {
		d := utf8.RuneError
		if next+1 < len(b) && b[next] == '\\' && b[next+1] == 'u' {
			r2, ok := hex4(b, next+2)
			if !ok {
				return dst, next, false
			}
			if d = utf16.DecodeRune(r, r2); d != utf8.RuneError {
				next += 6
			}
		}
		r = d
	}
	return utf8.AppendRune(dst, r), next, true
}

// hex4 decodes the four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// StringBodyLen is len(AppendStringBody(nil, s)), without building it.
func StringBodyLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
				n++
			case c < 0x20:
				n += 5
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += len("\ufffd") - 1
		case r == '\u2028' || r == '\u2029':
			n += len(`\u2028`) - size
		}
		i += size
	}
	return n
}
