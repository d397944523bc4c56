package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// tiktokenPresets maps preset names to pre-tokenizer patterns.
var tiktokenPresets = map[string]string{
	"cl100k": PatternCL100k,
	"o200k":  PatternO200k,
	"kimi":   PatternKimi,
	"qwen2":  PatternQwen2,
}

// tiktokenSpecials are the special tokens of the OpenAI presets.
var tiktokenSpecials = map[string]map[string]uint32{
	"cl100k": {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
	"o200k":  {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}

// TiktokenPreset returns the pre-tokenizer pattern of a tiktoken preset:
// "cl100k" (cl100k_base, also Llama-3), "o200k" (o200k_base: gpt-4o,
// gpt-oss), "kimi" (Kimi K2's tiktoken.model) or "qwen2".
func TiktokenPreset(name string) (pattern string, ok bool) {
	pattern, ok = tiktokenPresets[name]
	return pattern, ok
}

// TiktokenPresetNames lists the preset names, sorted.
func TiktokenPresetNames() []string {
	names := make([]string, 0, len(tiktokenPresets))
	for n := range tiktokenPresets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TiktokenSpecials returns a copy of the special tokens of an OpenAI preset
// ("cl100k", "o200k"), which LoadTiktoken uses when given no specials; nil
// for other names.
func TiktokenSpecials(preset string) map[string]uint32 {
	src, ok := tiktokenSpecials[preset]
	if !ok {
		return nil
	}
	out := make(map[string]uint32, len(src))
	for k, v := range src {
		out[k] = v
	}
	return out
}

// TiktokenPresetForFile guesses the preset of a rank file from its name:
// "cl100k" for cl100k_base.tiktoken, "o200k" for o200k_base.tiktoken and
// o200k_harmony, "kimi" for tiktoken.model; "" when it cannot tell.
func TiktokenPresetForFile(path string) string {
	base := strings.ToLower(filepath.Base(path))
	switch {
	case strings.Contains(base, "cl100k"):
		return "cl100k"
	case strings.Contains(base, "o200k"):
		return "o200k"
	case base == "tiktoken.model":
		return "kimi"
	}
	return ""
}

// LoadTiktoken loads a tiktoken rank file (`*.tiktoken`, Kimi's
// `tiktoken.model`; plain or .zst): one "base64(token bytes) rank" per line,
// the rank being the token id and the merge priority.
//
// pattern is a preset name ([TiktokenPreset]) or a regular expression
// (Oniguruma/PCRE syntax as in tokenizer.json files; `&&[^...]` class
// intersections are supported). specials maps special-token text to ids; when
// nil, the preset's [TiktokenSpecials] are used. Encode splits specials out of
// the text like added tokens (tiktoken's allowed_special="all"), and keeps
// text that the pattern does not match as its own pieces (tiktoken drops it;
// the presets match all text, so they agree).
func LoadTiktoken(path string, pattern string, specials map[string]uint32) (*Tiktoken, error) {
	data, err := readMaybeZstd(path)
	if err != nil {
		return nil, err
	}
	if specials == nil {
		specials = TiktokenSpecials(pattern)
	}
	t, err := FromTiktoken(data, path, pattern, specials)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// FromTiktoken builds a tokenizer from the contents of a tiktoken rank file;
// see [LoadTiktoken].
func FromTiktoken(data []byte, name, pattern string, specials map[string]uint32) (*Tiktoken, error) {
	if pattern == "" {
		return nil, fmt.Errorf("tiktoken: no pre-tokenizer pattern: give a preset (%s) or a regular expression", strings.Join(TiktokenPresetNames(), ", "))
	}
	if p, ok := tiktokenPresets[pattern]; ok {
		pattern = p
	}
	m, err := newMatcher(pattern)
	if err != nil {
		return nil, err
	}
	ranks, err := parseTiktokenRanks(data)
	if err != nil {
		return nil, err
	}
	bm := &bpeModel{
		vocab:        make(map[string]uint32, len(ranks)),
		merges:       make(map[uint64]merge, len(ranks)*4),
		ignoreMerges: true, // tiktoken takes a piece found whole in the ranks
	}
	maxID := uint32(0)
	seen := make(map[uint32]int, len(ranks))
	for _, r := range ranks {
		if _, dup := bm.vocab[r.tok]; dup {
			return nil, fmt.Errorf("line %d: token %q appears twice", r.line, r.tok)
		}
		if prev, dup := seen[r.rank]; dup {
			return nil, fmt.Errorf("line %d: rank %d already given on line %d", r.line, r.rank, prev)
		}
		seen[r.rank] = r.line
		bm.vocab[r.tok] = r.rank
		maxID = max(maxID, r.rank)
	}
	for _, id := range specials {
		maxID = max(maxID, id)
	}
	if limit := maxTokenID(len(ranks) + len(specials)); maxID > limit {
		return nil, fmt.Errorf("rank %d is above %d: ranks must be dense", maxID, limit)
	}
	pieces := make([]string, maxID+1)
	for tok, id := range bm.vocab {
		pieces[id] = tok
		if len(tok) == 1 {
			bm.byteID[tok[0]], bm.byteOK[tok[0]] = id, true
		}
	}
	// A pair of adjacent parts merges with the rank of their concatenation.
	for tok, id := range bm.vocab {
		for k := 1; k < len(tok); k++ {
			a, oka := bm.vocab[tok[:k]]
			b, okb := bm.vocab[tok[k:]]
			if oka && okb {
				bm.merges[pairKey(a, b)] = merge{rank: id, id: id}
			}
		}
	}
	for b := 0; b < 256; b++ {
		if !bm.byteOK[b] {
			return nil, fmt.Errorf("byte 0x%02x has no rank: not a byte-level BPE rank file", b)
		}
	}
	list := make([]hfAddedToken, 0, len(specials))
	for text, id := range specials {
		list = append(list, hfAddedToken{ID: id, Content: text, Special: true})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	t := newBPE(name)
	t.pre = []preStep{&splitStep{m: m, behavior: splitIsolated}}
	t.model = bm
	t.pieces = pieces
	if t.added, err = newAddedTokens(list, len(pieces)); err != nil {
		return nil, err
	}
	for _, a := range list {
		t.pieces[a.ID] = a.Content
	}
	return t, nil
}

type tiktokenRank struct {
	tok  string
	rank uint32
	line int
}

func parseTiktokenRanks(data []byte) ([]tiktokenRank, error) {
	var out []tiktokenRank
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		b64, num, ok := strings.Cut(text, " ")
		if !ok {
			return nil, fmt.Errorf("line %d: %q is not \"base64 rank\"", line, clipString(text))
		}
		tok, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(tok) == 0 {
			return nil, fmt.Errorf("line %d: token %q is not non-empty base64: %v", line, clipString(b64), err)
		}
		rank, err := strconv.ParseUint(strings.TrimSpace(num), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("line %d: rank %q: %v", line, clipString(num), err)
		}
		out = append(out, tiktokenRank{tok: string(tok), rank: uint32(rank), line: line})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if len(out) == 0 {
		return nil, errors.New("no ranks: empty tiktoken file")
	}
	return out, nil
}

func clipString(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
