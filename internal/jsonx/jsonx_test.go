package jsonx

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestAppendStringRoundTrips(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\s", "\n\r\t\x00\x1f", "é ✓ 🙂", "\u2028\u2029", "bad\xffutf8"} {
		b := AppendString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q → %s: %v", s, b, err)
		}
		want := s
		if !utf8.ValidString(s) {
			want = string([]rune(s)) // invalid bytes become U+FFFD
		}
		if got != want {
			t.Fatalf("%q → %s → %q", s, b, got)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("a\"b\\c\n")
	f.Add("\xff\xfe")
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q → invalid JSON %s: %v", s, b, err)
		}
		if utf8.ValidString(s) && got != s {
			t.Fatalf("%q → %q", s, got)
		}
	})
}

// unescapeAll decodes the body of a JSON string with AppendUnescaped, as
// the hand-written parsers do; ok is false where it finds it invalid.
func unescapeAll(body []byte) (string, bool) {
	var out []byte
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '"' || c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		var ok bool
		if out, i, ok = AppendUnescaped(out, body, i); !ok {
			return "", false
		}
	}
	return string(out), true
}

func TestAppendUnescaped(t *testing.T) {
	for _, tc := range []struct {
		body string
		want string
		ok   bool
	}{
		{`plain`, "plain", true},
		{`a\"b\\c\/d\b\f\n\r\t`, "a\"b\\c/d\b\f\n\r\t", true},
		{`\u00e9\u2713`, "é✓", true},
		{`\ud83d\ude42`, "🙂", true},
		{`\ud83dx`, "\ufffdx", true},      // a lone high surrogate
		{`\ude42`, "\ufffd", true},        // a lone low surrogate
		{`\ud83d\u0041`, "\ufffdA", true}, // not a pair: the second escape stands
		{`\ud83d\uZZZZ`, "", false},       // the second escape is invalid
		{`\x`, "", false},                 // unknown escape
		{`\u12`, "", false},               // too few hex digits
		{`\`, "", false},                  // cut short
	} {
		got, ok := unescapeAll([]byte(tc.body))
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: got %q ok %v, want %q ok %v", tc.body, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzAppendUnescaped holds AppendUnescaped to encoding/json's decoding of
// the same string body, and StringBodyLen to AppendStringBody.
func FuzzAppendUnescaped(f *testing.F) {
	for _, s := range []string{`a\"b`, `\ud83d\ude42`, `\ud83d\u0041`, `\u00zz`, `\`, "\xff", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if n := StringBodyLen(body); n != len(AppendStringBody(nil, body)) {
			t.Fatalf("StringBodyLen(%q) = %d, AppendStringBody wrote %d bytes", body, n, len(AppendStringBody(nil, body)))
		}
		if !utf8.ValidString(body) {
			return // encoding/json replaces invalid bytes; the parsers refuse them first
		}
		var want string
		jsonErr := json.Unmarshal([]byte(`"`+body+`"`), &want)
		got, ok := unescapeAll([]byte(body))
		if ok != (jsonErr == nil) || ok && got != want {
			t.Fatalf("%q: got %q ok %v; encoding/json %q err %v", body, got, ok, want, jsonErr)
		}
	})
}
