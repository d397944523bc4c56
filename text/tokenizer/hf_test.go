package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/agentperf/agentperf/internal/testshared"
)

// sharedTokenizer returns the path of a real tokenizer in ../shared/tokenizers
// (relative to the module root), skipping the test when it is absent.
func sharedTokenizer(tb testing.TB, name string) string {
	tb.Helper()
	return testshared.Path(tb, filepath.Join("tokenizers", name+".tokenizer.json.zst"))
}

var (
	hfCacheMu sync.Mutex
	hfCache   = map[string]*HF{}
)

// loadShared loads a real tokenizer once per test binary.
func loadShared(tb testing.TB, name string) *HF {
	tb.Helper()
	p := sharedTokenizer(tb, name)
	hfCacheMu.Lock()
	defer hfCacheMu.Unlock()
	if t, ok := hfCache[name]; ok {
		return t
	}
	t, err := LoadHF(p)
	if err != nil {
		tb.Fatalf("LoadHF(%s): %v", p, err)
	}
	hfCache[name] = t
	return t
}

type referenceFile struct {
	Generator string                `json:"generator"`
	Texts     []string              `json:"texts"`
	IDs       map[string][][]uint32 `json:"ids"`
}

func loadReference(tb testing.TB) referenceFile {
	tb.Helper()
	data, err := os.ReadFile("testdata/reference_ids.json")
	if err != nil {
		tb.Fatal(err)
	}
	var ref referenceFile
	if err := json.Unmarshal(data, &ref); err != nil {
		tb.Fatalf("testdata/reference_ids.json: %v", err)
	}
	return ref
}

// TestHFReferenceIDs requires exact id equality with the reference
// implementation on every fixture text.
func TestHFReferenceIDs(t *testing.T) {
	ref := loadReference(t)
	for _, name := range []string{"qwen3", "deepseek_v3"} {
		t.Run(name, func(t *testing.T) {
			want, ok := ref.IDs[name]
			if !ok || len(want) != len(ref.Texts) {
				t.Fatalf("reference_ids.json has %d id lists for %s, want %d", len(want), name, len(ref.Texts))
			}
			tok := loadShared(t, name)
			for i, text := range ref.Texts {
				got := tok.Encode(text)
				if !slices.Equal(got, want[i]) {
					t.Errorf("text %d %q:\n got %v\nwant %v", i, clip(text), got, want[i])
				}
			}
		})
	}
}

func TestHFRoundTrip(t *testing.T) {
	ref := loadReference(t)
	texts := append(slices.Clone(ref.Texts), roundTripTexts...)
	texts = append(texts, codeSample, englishSample)
	for _, name := range []string{"qwen3", "deepseek_v3"} {
		t.Run(name, func(t *testing.T) {
			tok := loadShared(t, name)
			for _, text := range texts {
				want := text
				if name == "qwen3" {
					want = norm.NFC.String(text) // Qwen3 normalizes to NFC
				}
				if got := tok.Decode(tok.Encode(text)); got != want {
					t.Errorf("Decode(Encode(%q)) = %q", clip(text), clip(got))
				}
			}
		})
	}
}

func BenchmarkHFEncode(b *testing.B) {
	text := codeText(b, 1<<20)
	for _, name := range []string{"qwen3", "deepseek_v3"} {
		b.Run(name, func(b *testing.B) {
			tok := loadShared(b, name)
			b.Run("cached", func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					_ = tok.Encode(text)
				}
			})
			b.Run("cold", func(b *testing.B) {
				// A fresh pretoken cache each time: the cost of the first
				// (and usually only) corpus tokenization of a run.
				b.ReportAllocs()
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					tok.model.cache = wordCache{}
					_ = tok.Encode(text)
				}
			})
		})
	}
}

func BenchmarkLoadHF(b *testing.B) {
	for _, name := range []string{"qwen3", "deepseek_v3"} {
		p := sharedTokenizer(b, name)
		data, err := readMaybeZstd(p)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := FromHFJSON(data, name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func loadTiny(tb testing.TB) (*HF, []byte) {
	tb.Helper()
	data, err := os.ReadFile("testdata/tiny.tokenizer.json")
	if err != nil {
		tb.Fatal(err)
	}
	tok, err := FromHFJSON(data, "tiny")
	if err != nil {
		tb.Fatalf("FromHFJSON(tiny): %v", err)
	}
	return tok, data
}

// tokens renders ids as their decoded pieces, for readable assertions.
func tokens(tok Tokenizer, ids []uint32) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = tok.Decode([]uint32{id})
	}
	return out
}

// TestHFTinyMerges checks BPE merge priority, pre-tokenization and added
// tokens on a hand-made tokenizer with 12 merges.
func TestHFTinyMerges(t *testing.T) {
	t.Parallel()
	tok, _ := loadTiny(t)
	for _, tc := range []struct {
		text string
		want []string
	}{
		// "the": h+e (rank 1) first, then t+he has no merge.
		{"the cat", []string{"t", "he", " cat"}},
		{" the", []string{" the"}},
		{"in in", []string{"in", " in"}},
		// Whitespace: \s+(?!\S) leaves the last space to the word; the
		// three others merge Ġ+Ġ (rank 7) and stop (no ĠĠ+Ġ merge).
		{"    the", []string{"  ", " ", " the"}},
		{"     the", []string{"    ", " the"}},
		{"a\n\n\nb", []string{"a", "\n\n", "\n", "b"}},
		{"cat<|end|>cat", []string{"cat", "<|end|>", "cat"}},
		{"at cat", []string{"at", " cat"}},
		{"<|end|><|end|>", []string{"<|end|>", "<|end|>"}},
		{"x1234", []string{"x", "1", "2", "3", "4"}},
	} {
		t.Run(tc.text, func(t *testing.T) {
			ids := tok.Encode(tc.text)
			if got := tokens(tok, ids); !slices.Equal(got, tc.want) {
				t.Errorf("Encode(%q) = %q, want %q", tc.text, got, tc.want)
			}
			if got := tok.Decode(ids); got != tc.text {
				t.Errorf("round trip %q -> %q", tc.text, got)
			}
		})
	}
	if id, ok := tok.TokenID("<|end|>"); !ok || tok.Decode([]uint32{id}) != "<|end|>" {
		t.Errorf("TokenID(<|end|>) = %d, %v", id, ok)
	}
}

// TestHFMergeFormats checks that ["a b"] and [["a","b"]] merges load to the
// same tokenizer, and that ignore_merges takes whole-word vocab entries.
func TestHFMergeFormats(t *testing.T) {
	t.Parallel()
	tok, data := loadTiny(t)
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	model := doc["model"].(map[string]any)
	var pairs [][]string
	for _, m := range model["merges"].([]any) {
		a, b, _ := strings.Cut(m.(string), " ")
		pairs = append(pairs, []string{a, b})
	}
	model["merges"] = pairs
	pairData, _ := json.Marshal(doc)
	tok2, err := FromHFJSON(pairData, "tiny-pairs")
	if err != nil {
		t.Fatal(err)
	}
	text := "the cat in the hat\n\n  inner"
	if a, b := tok.Encode(text), tok2.Encode(text); !slices.Equal(a, b) {
		t.Errorf("string merges %v != pair merges %v", a, b)
	}

	// "the" is not reachable by merges (t+he has none) but is in vocab once
	// added; with ignore_merges it is taken whole.
	vocab := model["vocab"].(map[string]any)
	vocab["the"] = float64(len(vocab) + 10)
	model["ignore_merges"] = true
	ignData, _ := json.Marshal(doc)
	tok3, err := FromHFJSON(ignData, "tiny-ignore")
	if err != nil {
		t.Fatal(err)
	}
	if got := tokens(tok3, tok3.Encode("the")); !slices.Equal(got, []string{"the"}) {
		t.Errorf("ignore_merges: Encode(the) = %q, want [the]", got)
	}
	if got := tokens(tok, tok.Encode("the")); !slices.Equal(got, []string{"t", "he"}) {
		t.Errorf("without ignore_merges: Encode(the) = %q, want [t he]", got)
	}
}

func TestHFLoadErrors(t *testing.T) {
	t.Parallel()
	_, data := loadTiny(t)
	for _, tc := range []struct {
		name, find, replace, wantErr string
	}{
		{"not json", `{`, `[`, "parse tokenizer.json"},
		{"unigram model", `"type": "BPE"`, `"type": "Unigram"`, "only BPE"},
		{"unknown normalizer", `"type": "NFC"`, `"type": "Precompiled"`, `normalizer type "Precompiled"`},
		{"no byte level", `"type": "ByteLevel"`, `"type": "Digits"`, "ByteLevel"}, // the first is the pre-tokenizer
		{"bad merge", `"h e"`, `"h"`, "model.merges[1]"},
		{"merge not in vocab", `"h e"`, `"h q"`, "not in model.vocab"},
		{"bad regex", `\\s+(?!\\S)|\\s+"`, `\\s+(?!\\S)|\\s+("`, "compile pre-tokenizer pattern"},
		{"dropout", `"dropout": null`, `"dropout": 0.1`, "dropout"},
		{"huge id", `"Ġcat": 261`, `"Ġcat": 4000000000`, "ids must be dense"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := string(data)
			if !strings.Contains(s, tc.find) {
				t.Fatalf("fixture has no %q", tc.find)
			}
			s = strings.Replace(s, tc.find, tc.replace, 1)
			_, err := FromHFJSON([]byte(s), "bad")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("FromHFJSON error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestLoadHFPlainAndZstd(t *testing.T) {
	t.Parallel()
	tok, err := LoadHF("testdata/tiny.tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	if tok.Name() != "testdata/tiny.tokenizer.json" || tok.Approximate() {
		t.Errorf("Name() = %q, Approximate() = %v", tok.Name(), tok.Approximate())
	}
	if _, err := LoadHF("testdata/missing.json"); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("LoadHF(missing) error = %v, want one naming the file", err)
	}
	loadShared(t, "qwen3") // a .zst file
}

// FuzzHFRoundTrip holds the real Qwen3 tokenizer to Decode(Encode(s))
// == NFC(s); it is skipped, saying so, without ../shared.
func FuzzHFRoundTrip(f *testing.F) {
	for _, s := range roundTripTexts {
		f.Add(s)
	}
	f.Add(codeSample)
	tok := loadShared(f, "qwen3")
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s) // never panics, even on invalid UTF-8
		if !utf8.ValidString(s) {
			return
		}
		want := norm.NFC.String(s)
		if got := tok.Decode(ids); got != want {
			t.Fatalf("Decode(Encode(%q)) = %q, want %q", s, got, want)
		}
	})
}

// FuzzLoadHF checks that a malformed tokenizer.json never panics, and that a
// tokenizer that loads can encode and decode.
func FuzzLoadHF(f *testing.F) {
	_, data := loadTiny(f)
	f.Add(data)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"model":{"vocab":{"a":0},"merges":[["a","a"]]}}`))
	f.Add([]byte(`{"pre_tokenizer":{"type":"ByteLevel"},"decoder":{"type":"ByteLevel"},"model":{"vocab":{"a":0,"aa":1},"merges":["a a"]},"added_tokens":[{"id":2,"content":"x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := FromHFJSON(data, "fuzz")
		if err != nil {
			return
		}
		ids := tok.Encode("the cat in the hat <|end|> 123 日本\n\n  x")
		_ = tok.Decode(ids)
		_ = tok.Decode([]uint32{0, 1, 1 << 31})
	})
}

// TestHFConcurrent encodes from several goroutines at once (the pretoken
// cache and scratch pool are shared) and expects the sequential results.
func TestHFConcurrent(t *testing.T) {
	t.Parallel()
	tok, _ := loadTiny(t)
	texts := append(slices.Clone(roundTripTexts), codeSample, englishSample)
	want := make([][]uint32, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 20; r++ {
				for i, s := range texts {
					if got := tok.Encode(s); !slices.Equal(got, want[i]) {
						t.Errorf("concurrent Encode(%q) = %v, want %v", clip(s), got, want[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestScanJSON(t *testing.T) {
	t.Parallel()
	v, err := scanVocab(json.RawMessage(` { "a" : 1 , "\u0120b\"" :2,"\ud83d\ude00":3 } `))
	if err != nil || len(v) != 3 || v["a"] != 1 || v["Ġb\""] != 2 || v["😀"] != 3 {
		t.Errorf("scanVocab = %v, %v", v, err)
	}
	m, err := scanMerges(json.RawMessage(`[ "a b", "Ġ \u0120" ]`))
	if err != nil || !slices.Equal(m, [][2]string{{"a", "b"}, {"Ġ", "Ġ"}}) {
		t.Errorf("scanMerges(strings) = %v, %v", m, err)
	}
	m, err = scanMerges(json.RawMessage(`[["a","b"] , [ "c d" , "e" ]]`))
	if err != nil || !slices.Equal(m, [][2]string{{"a", "b"}, {"c d", "e"}}) {
		t.Errorf("scanMerges(pairs) = %v, %v", m, err)
	}
	for _, bad := range []string{`{"a":-1}`, `{"a":1.5}`, `{"a":99999999999}`, `{"a" 1}`, `{"a":1`, `["a"]`} {
		if _, err := scanVocab(json.RawMessage(bad)); err == nil {
			if _, err := scanMerges(json.RawMessage(bad)); err == nil {
				t.Errorf("%s: no error", bad)
			}
		}
	}
	for _, bad := range []string{`["ab"]`, `[["a"]]`, `[["a","b","c"]]`, `[["","b"]]`, `[1]`, `["a b"`} {
		if _, err := scanMerges(json.RawMessage(bad)); err == nil {
			t.Errorf("scanMerges(%s): no error", bad)
		}
	}
}

// TestHFAddedTokenFlags checks lstrip, rstrip and single_word against what
// the Rust HF tokenizers library (npm tokenizers 0.23.2) gives for the same
// tokenizer.json.
func TestHFAddedTokenFlags(t *testing.T) {
	t.Parallel()
	_, data := loadTiny(t)
	for _, tc := range []struct {
		flag string
		text string
		want []string
	}{
		{`"lstrip": true`, "a <|end|> b", []string{"a", "<|end|>", " ", "b"}},
		{`"lstrip": true`, "a  <|end|>\n\nb", []string{"a", "<|end|>", "\n\n", "b"}},
		{`"lstrip": true`, "x<|end|>y", []string{"x", "<|end|>", "y"}},
		{`"lstrip": true`, "x <|end|>", []string{"x", "<|end|>"}},
		{`"rstrip": true`, "a <|end|> b", []string{"a", " ", "<|end|>", "b"}},
		{`"rstrip": true`, "a  <|end|>\n\nb", []string{"a", "  ", "<|end|>", "b"}},
		{`"rstrip": true`, "x <|end|>", []string{"x", " ", "<|end|>"}},
		{`"single_word": true`, "a <|end|> b", []string{"a", " ", "<|end|>", " ", "b"}},
		{`"single_word": true`, "x<|end|>y", []string{"x", "<", "|", "e", "n", "d", "|", ">", "y"}},
		{`"single_word": true`, "<|end|>", []string{"<|end|>"}},
	} {
		t.Run(tc.flag+" "+tc.text, func(t *testing.T) {
			key, _, _ := strings.Cut(tc.flag, ":")
			s := strings.Replace(string(data), key+": false", tc.flag, 1)
			tok, err := FromHFJSON([]byte(s), "flags")
			if err != nil {
				t.Fatal(err)
			}
			if got := tokens(tok, tok.Encode(tc.text)); !slices.Equal(got, tc.want) {
				t.Errorf("Encode(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

// TestHFUnkToken checks bytes without a token: dropped without unk_token,
// else unk (fused with fuse_unk); the expectations are what the Rust HF
// tokenizers library (npm tokenizers 0.23.2) gives for the same file.
func TestHFUnkToken(t *testing.T) {
	t.Parallel()
	_, data := loadTiny(t)
	// Remove the tokens of "x" and "y" and add an <unk> token.
	s := strings.Replace(string(data), `"x": 120,`, `"<unk>": 120,`, 1)
	s = strings.Replace(s, `"y": 121,`, ``, 1)
	for _, tc := range []struct {
		name, unk, fuse string
		want            []string
	}{
		{"dropped", `"unk_token": null`, `"fuse_unk": false`, []string{"a", "b"}},
		{"unk", `"unk_token": "<unk>"`, `"fuse_unk": false`, []string{"a", "<unk>", "<unk>", "<unk>", "b"}},
		{"fused", `"unk_token": "<unk>"`, `"fuse_unk": true`, []string{"a", "<unk>", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := strings.Replace(strings.Replace(s, `"unk_token": null`, tc.unk, 1), `"fuse_unk": false`, tc.fuse, 1)
			tok, err := FromHFJSON([]byte(v), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if got := tokens(tok, tok.Encode("axyxb")); !slices.Equal(got, tc.want) {
				t.Errorf("Encode(axyxb) = %q, want %q", got, tc.want)
			}
		})
	}
	bad := strings.Replace(s, `"unk_token": null`, `"unk_token": "<nope>"`, 1)
	if _, err := FromHFJSON([]byte(bad), "bad"); err == nil || !strings.Contains(err.Error(), "unk_token") {
		t.Errorf("unknown unk_token: error %v", err)
	}
}

// BenchmarkHFCountTokensSmall counts ~256-byte snippets one at a time, as
// prompt synthesis does when it checks block boundaries.
func BenchmarkHFCountTokensSmall(b *testing.B) {
	text := codeText(b, 1<<20)
	for _, name := range []string{"qwen3", "deepseek_v3"} {
		b.Run(name, func(b *testing.B) {
			tok := loadShared(b, name)
			b.ReportAllocs()
			b.SetBytes(256)
			off := 0
			for b.Loop() {
				if off+256 > len(text) {
					off = 0
				}
				_ = tok.CountTokens(text[off : off+256])
				off += 256
			}
		})
	}
}
