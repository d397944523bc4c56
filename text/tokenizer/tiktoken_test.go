package tokenizer

import (
	"bufio"
	"encoding/base64"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

const tinySpecial = "<|endoftext|>"

func loadTinyTiktoken(tb testing.TB) *Tiktoken {
	tb.Helper()
	tok, err := LoadTiktoken("testdata/tiny.tiktoken", "cl100k", map[string]uint32{tinySpecial: 1000})
	if err != nil {
		tb.Fatalf("LoadTiktoken: %v", err)
	}
	return tok
}

// naiveRanks reads a rank file the simplest way.
func naiveRanks(tb testing.TB, path string) map[string]uint32 {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	ranks := map[string]uint32{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		b64, num, _ := strings.Cut(sc.Text(), " ")
		tok, _ := base64.StdEncoding.DecodeString(b64)
		r, _ := strconv.Atoi(num)
		ranks[string(tok)] = uint32(r)
	}
	return ranks
}

// naiveTiktoken is tiktoken's algorithm written out plainly: pieces from the
// pattern; a piece found whole is one token; else start from bytes and
// repeatedly merge the leftmost adjacent pair whose concatenation has the
// lowest rank.
func naiveTiktoken(ranks map[string]uint32, m matcher, text string) []uint32 {
	var out []uint32
	for _, sp := range m.findAll(nil, text) {
		piece := text[sp.start:sp.end]
		if r, ok := ranks[piece]; ok {
			out = append(out, r)
			continue
		}
		parts := make([]string, len(piece))
		for i := 0; i < len(piece); i++ {
			parts[i] = piece[i : i+1]
		}
		for {
			best, bestRank := -1, uint32(1<<32-1)
			for i := 0; i+1 < len(parts); i++ {
				if r, ok := ranks[parts[i]+parts[i+1]]; ok && r < bestRank {
					best, bestRank = i, r
				}
			}
			if best < 0 {
				break
			}
			parts[best] += parts[best+1]
			parts = slices.Delete(parts, best+1, best+2)
		}
		for _, p := range parts {
			out = append(out, ranks[p])
		}
	}
	return out
}

func TestTiktokenMatchesNaive(t *testing.T) {
	t.Parallel()
	tok := loadTinyTiktoken(t)
	ranks := naiveRanks(t, "testdata/tiny.tiktoken")
	m, _ := newMatcher(PatternCL100k)
	texts := append(slices.Clone(roundTripTexts), codeSample, englishSample, strings.Repeat("hello main ", 50), strings.Repeat(" ", 300)+"x")
	for _, text := range texts {
		if strings.Contains(text, tinySpecial) {
			continue
		}
		got, want := tok.Encode(text), naiveTiktoken(ranks, m, text)
		if !slices.Equal(got, want) {
			t.Errorf("Encode(%q):\n got %v\nwant %v", clip(text), got, want)
		}
		if back := tok.Decode(got); back != text {
			t.Errorf("round trip %q -> %q", clip(text), clip(back))
		}
	}
}

func TestTiktokenSpecialsAndPresets(t *testing.T) {
	t.Parallel()
	tok := loadTinyTiktoken(t)
	ids := tok.Encode("hello" + tinySpecial + "world")
	if !slices.Contains(ids, 1000) || tok.Decode(ids) != "hello"+tinySpecial+"world" {
		t.Errorf("special token: ids %v decode to %q", ids, tok.Decode(ids))
	}
	if tok.Approximate() || tok.Name() != "testdata/tiny.tiktoken" {
		t.Errorf("Name() = %q, Approximate() = %v", tok.Name(), tok.Approximate())
	}
	for _, preset := range []string{"cl100k", "o200k", "kimi", "qwen2", `\S+|\s+`} {
		if _, err := LoadTiktoken("testdata/tiny.tiktoken", preset, map[string]uint32{}); err != nil {
			t.Errorf("LoadTiktoken(pattern %s): %v", preset, err)
		}
	}
	// Without specials, the preset's are used: cl100k's ids are far above
	// this small file's ranks.
	if _, err := LoadTiktoken("testdata/tiny.tiktoken", "cl100k", nil); err == nil || !strings.Contains(err.Error(), "100276") {
		t.Errorf("LoadTiktoken(cl100k, nil specials) error = %v, want the preset's <|endofprompt|> id 100276 to be too sparse", err)
	}
	for file, want := range map[string]string{"cl100k_base.tiktoken": "cl100k", "/x/o200k_harmony.tiktoken": "o200k", "tiktoken.model": "kimi", "x.tiktoken": ""} {
		if got := TiktokenPresetForFile(file); got != want {
			t.Errorf("TiktokenPresetForFile(%s) = %q, want %q", file, got, want)
		}
	}
}

func TestTiktokenErrors(t *testing.T) {
	t.Parallel()
	good, err := os.ReadFile("testdata/tiny.tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, data, pattern, wantErr string
	}{
		{"no pattern", string(good), "", "no pre-tokenizer pattern"},
		{"bad pattern", string(good), `(`, "compile pre-tokenizer pattern"},
		{"empty", "", "cl100k", "empty tiktoken file"},
		{"bad base64", "!!! 0\n", "cl100k", "line 1"},
		{"bad rank", string(good) + "YWJj x\n", "cl100k", "rank \"x\""},
		{"no rank", string(good) + "YWJj\n", "cl100k", "is not \"base64 rank\""},
		{"duplicate token", string(good) + "YQ== 5000\n", "cl100k", "appears twice"},
		{"duplicate rank", string(good) + "YWJjZA== 3\n", "cl100k", "rank 3 already given"},
		{"missing byte", strings.Join(strings.Split(string(good), "\n")[1:], "\n"), "cl100k", "byte 0x00 has no rank"},
		{"sparse", string(good) + "YWJjZA== 4000000000\n", "cl100k", "ranks must be dense"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromTiktoken([]byte(tc.data), "x", tc.pattern, nil)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func FuzzTiktokenMatchesNaive(f *testing.F) {
	for _, s := range roundTripTexts {
		f.Add(s)
	}
	tok := loadTinyTiktoken(f)
	ranks := naiveRanks(f, "testdata/tiny.tiktoken")
	m, _ := newMatcher(PatternCL100k)
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, tinySpecial) {
			return
		}
		got := tok.Encode(s)
		if want := naiveTiktoken(ranks, m, s); !slices.Equal(got, want) {
			t.Fatalf("Encode(%q) = %v, want %v", s, got, want)
		}
		if utf8.ValidString(s) && tok.Decode(got) != s {
			t.Fatalf("round trip %q -> %q", s, tok.Decode(got))
		}
	})
}

func FuzzLoadTiktoken(f *testing.F) {
	good, err := os.ReadFile("testdata/tiny.tiktoken")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte("YQ== 0\nYg== 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := FromTiktoken(data, "fuzz", "cl100k", nil)
		if err != nil {
			return
		}
		_ = tok.Decode(tok.Encode("hello world 123 日本"))
	})
}

func TestTiktokenPresetAccessors(t *testing.T) {
	t.Parallel()
	if got := TiktokenPresetNames(); !slices.Equal(got, []string{"cl100k", "kimi", "o200k", "qwen2"}) {
		t.Errorf("TiktokenPresetNames() = %v", got)
	}
	if p, ok := TiktokenPreset("o200k"); !ok || p != PatternO200k {
		t.Errorf("TiktokenPreset(o200k) = %q, %v", p, ok)
	}
	sp := TiktokenSpecials("cl100k")
	if sp["<|endoftext|>"] != 100257 {
		t.Errorf("TiktokenSpecials(cl100k) = %v", sp)
	}
	sp["<|endoftext|>"] = 1 // a copy: the preset is unchanged
	if TiktokenSpecials("cl100k")["<|endoftext|>"] != 100257 || TiktokenSpecials("kimi") != nil {
		t.Error("TiktokenSpecials returned shared or unexpected maps")
	}
}
