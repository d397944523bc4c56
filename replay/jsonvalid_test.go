package replay

import (
	"encoding/json"
	"strings"
	"testing"
)

var validJSONCases = []string{
	`{}`, `[]`, ` {"a":1} `, `{"a":[1,2,{"b":null}],"c":"x\"y\\u00e9\n"}`, `"s"`, `0`, `-0.5e+10`, `1E5`, `true`, `false`, `null`,
	`{"choices":[{"index":0,"delta":{"content":" and"},"logprobs":null,"finish_reason":null}]}`,
	string(benchUsageLine[len("data: "):]),
	"\"\xff\xfe\"", // bytes ≥ 0x80 pass unchecked, as in encoding/json
	// invalid
	``, ` `, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a":1 "b":2}`, `01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`,
	`tru`, `nul`, `truex`, `"abc`, "\"a\tb\"", `"\x"`, `"\u12"`, `"\u12g4"`, `{} {}`, `[1] x`, `{"a":1]`, `[1}`, `{1:2}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
}

// TestValidJSONMatchesEncodingJSON holds validJSON to json.Valid.
func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, c := range validJSONCases {
		name := c
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			if got, want := validJSON([]byte(c)), json.Valid([]byte(c)); got != want {
				t.Errorf("validJSON(%.80q) = %v, json.Valid = %v", c, got, want)
			}
		})
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, c := range validJSONCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}

func BenchmarkValidJSON(b *testing.B) {
	line := benchContentLine[len("data: "):]
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if !validJSON(line) {
			b.Fatal("invalid")
		}
	}
}
