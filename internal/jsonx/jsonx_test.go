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
