package jsonx

import (
	"unicode/utf16"
	"unicode/utf8"
)

// The scanners below read JSON held in memory, by index: each takes the
// index where a token starts and returns the index after it, with ok
// false where the input is not valid JSON. They accept exactly what
// encoding/json accepts (RFC 8259; bytes ≥ 0x80 inside strings pass
// unchecked, as there) and allocate nothing. The response scanner of
// replay and the record decoder of metrics are built on them.

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace (len(b) when there is none).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// HasLiteral reports whether b[i:] starts with lit.
func HasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// ScanString scans the string literal that starts at b[i] and returns
// the index after its closing quote. ok is false when b[i] is not '"',
// and for an unterminated string, a control byte, or an invalid escape;
// the index is then where the problem is.
func ScanString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i++
	for i < len(b) {
		for i < len(b) && byteClass[b[i]]&plainString != 0 {
			i++
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 {
					return i, false
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return i, false
					}
				}
				i += 6
			default:
				return i, false
			}
		}
	}
	return i, false
}

// Classes of bytes inside a string literal, in byteClass.
const (
	plainString = 1 << iota // stands for itself in a string: not '"', '\\' or a control byte
	plainKey                // plainString and ASCII
)

// byteClass classifies every byte value (a table lookup per byte instead
// of three comparisons, in the loops that skip the plain run of a string).
var byteClass = func() (t [256]uint8) {
	for c := 0x20; c < 256; c++ {
		if c == '"' || c == '\\' {
			continue
		}
		t[c] = plainString
		if c < 0x80 {
			t[c] |= plainKey
		}
	}
	return t
}()

// PlainASCII reports whether c is an ASCII byte that stands for itself
// inside a string literal (not '"', '\\' or a control byte): a key made
// only of such bytes decodes to itself.
func PlainASCII(c byte) bool { return byteClass[c]&plainKey != 0 }

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// ScanNumber scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at b[i]
// and returns the index after it.
func ScanNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = scanDigits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := scanDigits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := scanDigits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func scanDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// AppendUnquoted appends the decoded value of lit, a string literal that
// ScanString accepted (quotes included), to dst, exactly as encoding/json
// decodes it: escapes resolved, a surrogate pair joined, a lone surrogate
// and each byte of invalid UTF-8 replaced by U+FFFD. It decodes the
// escapes itself instead of calling AppendUnescaped, which validates each
// one again: the live reply's text is decoded with it on the response
// path, where the call per escape measured about a quarter slower on
// text dense in \u escapes (FuzzScan and FuzzAppendUnescaped hold each
// to encoding/json).
func AppendUnquoted(dst, lit []byte) []byte {
	s := lit[1 : len(lit)-1]
	i := 0
	for i < len(s) && s[i] != '\\' && s[i] < utf8.RuneSelf {
		i++
	}
	dst = append(dst, s[:i]...)
	for i < len(s) {
		switch c := s[i]; {
		case c == '\\':
			switch e := s[i+1]; e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4Valid(s[i+2 : i+6])
				i += 6
				if utf16.IsSurrogate(r) {
					if len(s)-i >= 6 && s[i] == '\\' && s[i+1] == 'u' {
						if d := utf16.DecodeRune(r, hex4Valid(s[i+2:i+6])); d != utf8.RuneError {
							dst = utf8.AppendRune(dst, d)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			dst = utf8.AppendRune(dst, r)
			i += n
		}
	}
	return dst
}

// hex4Valid is the value of four hex digits that ScanString accepted.
func hex4Valid(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
