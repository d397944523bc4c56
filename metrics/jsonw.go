package metrics

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// The JSON appenders below write exactly what aiperf's Python writers
// produce for the same values, without reflection: floats in Python repr
// form (3300.0, 0.1, 1e-05, 1e+20), integers as integers, strings escaped.

// appendFloat appends f as Python's repr would write it. NaN and ±Inf must
// be filtered out by the caller (they are omitted from every artifact).
func appendFloat(b []byte, f float64) []byte {
	a := math.Abs(f)
	if a == 0 || (a >= 1e-4 && a < 1e16) {
		start := len(b)
		b = strconv.AppendFloat(b, f, 'f', -1, 64)
		for _, c := range b[start:] {
			if c == '.' {
				return b
			}
		}
		return append(b, '.', '0')
	}
	return strconv.AppendFloat(b, f, 'e', -1, 64)
}

// appendNumber appends f as an integer when asInt (f must be whole) and as
// a Python-repr float otherwise.
func appendNumber(b []byte, f float64, asInt bool) []byte {
	if asInt && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.AppendInt(b, int64(f), 10)
	}
	return appendFloat(b, f)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// control characters, quotes and backslashes are escaped; < > & are left
// as they are (Python's json does not escape them either).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
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
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendKey appends "key": (key must need no escaping).
func appendKey(b []byte, key string) []byte {
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}
