package tokenizer

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// TestPatternVariantsReference checks the hand-written pre-tokenizer matchers
// (cl100k/Llama-3, o200k/gpt-oss, Kimi, GPT-2 ByteLevel, Digits) against the
// Rust HF tokenizers library: Qwen3's vocabulary and merges with each
// pre-tokenizer of testdata/pattern_ids.json must give exactly its ids.
func TestPatternVariantsReference(t *testing.T) {
	base := loadShared(t, "qwen3")
	ref := loadReference(t)
	data, err := os.ReadFile("testdata/pattern_ids.json")
	if err != nil {
		t.Fatal(err)
	}
	var pf struct {
		PreTokenizers map[string]json.RawMessage `json:"pre_tokenizers"`
		IDs           map[string][][]uint32      `json:"ids"`
	}
	if err := json.Unmarshal(data, &pf); err != nil {
		t.Fatalf("testdata/pattern_ids.json: %v", err)
	}
	if len(pf.PreTokenizers) == 0 {
		t.Fatal("testdata/pattern_ids.json has no variants")
	}
	for name, raw := range pf.PreTokenizers {
		t.Run(name, func(t *testing.T) {
			byteLevel := false
			pre, err := parsePreTokenizer(raw, &byteLevel)
			if err != nil || !byteLevel {
				t.Fatalf("parsePreTokenizer: %v (byte level %v)", err, byteLevel)
			}
			for _, step := range pre {
				if sp, ok := step.(*splitStep); ok {
					if _, slow := sp.m.(*regexMatcher); slow {
						t.Errorf("variant %s uses the regexp fallback, want a hand-written matcher", name)
					}
				}
			}
			v := newBPE("qwen3-" + name)
			v.norm, v.pre, v.model, v.added, v.pieces = base.norm, pre, base.model, base.added, base.pieces
			want := pf.IDs[name]
			if len(want) == 0 || len(want) > len(ref.Texts) {
				t.Fatalf("%d id lists for %s", len(want), name)
			}
			for i, text := range ref.Texts[:len(want)] {
				if got := v.Encode(text); !slices.Equal(got, want[i]) {
					t.Errorf("text %d %q:\n got %v\nwant %v", i, clip(text), got, want[i])
				}
			}
		})
	}
}
