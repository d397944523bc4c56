package metrics

import (
	"math"
	"strconv"

	"github.com/agentperf/agentperf/internal/jsonx"
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

// appendString appends s as a JSON string (see jsonx.AppendString).
func appendString(b []byte, s string) []byte { return jsonx.AppendString(b, s) }

// appendKey appends "key": (key must need no escaping).
func appendKey(b []byte, key string) []byte {
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}
