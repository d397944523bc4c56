package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// sharedTokenizer returns the path of a real tokenizer in ../shared/tokenizers
// (relative to the module root), skipping the test when it is absent.
func sharedTokenizer(tb testing.TB, name string) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Skip("no go.mod above the working directory")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "tokenizers", name+".tokenizer.json.zst")
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("real tokenizer %s not available (%v): skipping", name, err)
	}
	return p
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
