// Package codectest holds the property every artifact codec's fuzz
// target checks on arbitrary input (tests only): a decode either fails or
// gives a value whose encoding is a fixed point of decode and encode.
package codectest

import (
	"bytes"
	"testing"
)

// FixedPoint decodes data; when that fails it returns false (any error is
// fine, a panic is not). Otherwise the value must encode, its encoding
// must decode, and that must encode to the same bytes: a file the decoder
// accepts is rewritten stably. It returns true and the first encoding.
func FixedPoint[T any](tb testing.TB, data []byte, decode func([]byte) (T, error), encode func(T) ([]byte, error)) ([]byte, bool) {
	tb.Helper()
	v, err := decode(data)
	if err != nil {
		return nil, false
	}
	y, err := encode(v)
	if err != nil {
		tb.Fatalf("the decoded value of %q does not encode: %v", data, err)
	}
	v2, err := decode(y)
	if err != nil {
		tb.Fatalf("its encoding does not decode: %v\n%s\n(from %q)", err, y, data)
	}
	z, err := encode(v2)
	if err != nil || !bytes.Equal(y, z) {
		tb.Fatalf("re-encoding is not stable (%v):\n%s\n%s", err, y, z)
	}
	return y, true
}

// RoundTrip encodes v, decodes the encoding and checks that the decoded
// value encodes to the same bytes. It returns the decoded value (for the
// caller to compare with v, field by field) and the encoding.
func RoundTrip[T any](tb testing.TB, v T, encode func(T) ([]byte, error), decode func([]byte) (T, error)) (T, []byte) {
	tb.Helper()
	b, err := encode(v)
	if err != nil {
		tb.Fatalf("encode: %v", err)
	}
	back, err := decode(b)
	if err != nil {
		tb.Fatalf("decode what the encoder wrote: %v\n%s", err, b)
	}
	again, err := encode(back)
	if err != nil || !bytes.Equal(again, b) {
		tb.Fatalf("re-encoded value differs (%v):\n%s\nwas\n%s", err, again, b)
	}
	return back, b
}
