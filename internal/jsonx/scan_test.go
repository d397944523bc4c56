package jsonx

import (
	"encoding/json"
	"testing"
)

var scanCases = []string{
	`""`, `"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\ud83d\ude42"`, `"\ud83dx"`, `"\ud83d\u0041"`, "\"\xff\xfe\"", `"é ✓"`,
	`0`, `-0`, `12`, `-0.5e+10`, `1E5`, `3.25`, `1e-07`,
	// invalid
	`"`, `"abc`, "\"a\tb\"", `"\x"`, `"\u12"`, `"\u12g4"`, `"\`, `01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `--1`, `0x1`,
}

// scanWhole scans the one string or number b holds, as a JSON document
// (trailing space allowed): ok when the scanner accepts it whole.
func scanWhole(b []byte) (end int, isString, ok bool) {
	switch {
	case len(b) > 0 && b[0] == '"':
		end, ok = ScanString(b, 0)
		isString = true
	case len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9'):
		end, ok = ScanNumber(b, 0)
	default:
		return 0, false, false
	}
	return end, isString, ok && SkipSpace(b, end) == len(b)
}

// checkScan holds ScanString and ScanNumber to json.Valid, and
// AppendUnquoted to encoding/json's decoding of the literal.
func checkScan(t *testing.T, b []byte) {
	end, isString, ok := scanWhole(b)
	if len(b) == 0 || (b[0] != '"' && b[0] != '-' && (b[0] < '0' || b[0] > '9')) {
		return
	}
	if want := json.Valid(b); ok != want {
		t.Fatalf("scanner accepts %q: %v, json.Valid: %v", b, ok, want)
	}
	if !ok || !isString {
		return
	}
	var want string
	if err := json.Unmarshal(b[:end], &want); err != nil {
		t.Fatal(err)
	}
	if got := AppendUnquoted([]byte("x"), b[:end]); string(got) != "x"+want {
		t.Fatalf("AppendUnquoted(%q) = %q, encoding/json %q", b[:end], got[1:], want)
	}
}

func TestScanMatchesEncodingJSON(t *testing.T) {
	for _, c := range scanCases {
		checkScan(t, []byte(c))
		checkScan(t, []byte(c+" \n"))
	}
}

func FuzzScan(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	f.Fuzz(checkScan)
}

func TestPlainASCII(t *testing.T) {
	for c := range 256 {
		want := c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
		if got := PlainASCII(byte(c)); got != want {
			t.Errorf("PlainASCII(%#x) = %v", c, got)
		}
	}
}

// TestScanStringNeedsAQuote: a literal is only a string when it opens
// with a quote; what follows the first byte is not scanned as one (the
// stream-shape fast path hands ScanString whatever sits where a string
// was, e.g. `0"`).
func TestScanStringNeedsAQuote(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{{`""`, true}, {`"a"`, true}, {`0"`, false}, {`a"b"`, false}, {``, false}, {`"`, false}} {
		if j, ok := ScanString([]byte(c.in), 0); ok != c.ok || ok && j != len(c.in) {
			t.Errorf("ScanString(%q) = %d, %v; want ok %v", c.in, j, ok, c.ok)
		}
	}
}
