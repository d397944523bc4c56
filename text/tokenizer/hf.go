package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/text/unicode/norm"
)

// BPE is a byte-level BPE tokenizer: one loaded from a Hugging Face
// tokenizer.json (Llama-3, Qwen2/3, DeepSeek-V3, gpt-oss and the like) by
// [LoadHF] or [FromHFJSON], or from a tiktoken rank file by [LoadTiktoken].
// It is safe for concurrent use.
//
// Encode works as the HF tokenizers library does with
// add_special_tokens=False: added tokens (special or not) that appear
// literally in the text are split out first and become their ids; the text
// between them is normalized, pre-tokenized and BPE-merged. The
// post-processor (BOS/EOS, templates), truncation and padding are not
// applied. Added tokens are matched in the raw text, leftmost-longest, with
// their lstrip/rstrip/single_word flags; HF matches those marked
// normalized=true in the normalized text instead, which differs only when the
// normalizer changes a token's own characters (not for the supported models).
// Character classes (\p{L}, \s, ...) come from Go's Unicode tables (version
// 15.0): characters first assigned in a later Unicode version, which the Rust
// library's Oniguruma already classifies, can pre-tokenize differently.
// Decode is the ByteLevel decoder with skip_special_tokens=False:
// added tokens decode to their content. Decode(Encode(s)) == s for valid
// UTF-8 s when the normalizer leaves s unchanged (for NFC models: when s is
// in NFC).
type BPE struct {
	name  string
	norm  []func(string) string
	pre   []preStep
	model *bpeModel
	added *addedTokens
	// pieces holds the decoded bytes of every id (empty for unused ids).
	pieces  []string
	scratch sync.Pool
}

// HF is the tokenizer [LoadHF] returns.
type HF = BPE

// Tiktoken is the tokenizer [LoadTiktoken] returns.
type Tiktoken = BPE

var _ Tokenizer = (*BPE)(nil)

// Name returns the name given at load time (the file path for LoadHF and
// LoadTiktoken).
func (t *BPE) Name() string { return t.name }

// Approximate returns false: the tokenizer is the model's own.
func (t *BPE) Approximate() bool { return false }

// VocabSize returns one more than the largest token id.
func (t *BPE) VocabSize() int { return len(t.pieces) }

// TokenID returns the id of an added token (such as "<|im_start|>") or of a
// vocabulary token given as its raw text.
func (t *BPE) TokenID(text string) (uint32, bool) {
	if id, ok := t.added.ids[text]; ok {
		return id.id, true
	}
	id, ok := t.model.vocab[text]
	return id, ok
}

// Encode returns the token ids of text.
func (t *BPE) Encode(text string) []uint32 {
	return t.AppendEncode(make([]uint32, 0, len(text)/3+4), text)
}

// AppendEncode appends the token ids of text to dst.
func (t *BPE) AppendEncode(dst []uint32, text string) []uint32 {
	sc := t.scratch.Get().(*scratch)
	dst = t.appendEncode(dst, text, sc)
	t.scratch.Put(sc)
	return dst
}

// CountTokens returns len(Encode(text)); it allocates only while warming up
// its pooled buffers and the pretoken cache.
func (t *BPE) CountTokens(text string) int {
	sc := t.scratch.Get().(*scratch)
	sc.ids = t.appendEncode(sc.ids[:0], text, sc)
	n := len(sc.ids)
	if cap(sc.ids) > 1<<20 {
		sc.ids = nil // do not pin a huge buffer in the pool
	}
	t.scratch.Put(sc)
	return n
}

func (t *BPE) appendEncode(dst []uint32, text string, sc *scratch) []uint32 {
	for len(text) > 0 {
		start, end, id := t.added.find(text)
		dst = t.encodeSegment(dst, text[:start], sc)
		if end == start {
			break
		}
		dst = append(dst, id)
		text = text[end:]
	}
	return dst
}

// encodeSegment encodes text without added tokens.
func (t *BPE) encodeSegment(dst []uint32, text string, sc *scratch) []uint32 {
	if text == "" {
		return dst
	}
	for _, n := range t.norm {
		text = n(text)
	}
	return t.encodeLevel(dst, text, 0, sc)
}

// encodeLevel applies pre-tokenizer step level and those after it to piece,
// depth first (so only the first step's output can be large), then the
// model.
func (t *BPE) encodeLevel(dst []uint32, piece string, level int, sc *scratch) []uint32 {
	if level == len(t.pre) {
		return t.model.encodeWord(dst, piece)
	}
	if len(sc.levels) <= level {
		sc.levels = append(sc.levels, make([][]string, level+1-len(sc.levels))...)
	}
	parts := t.pre[level].apply(sc.levels[level][:0], piece, sc)
	sc.levels[level] = parts
	for _, p := range parts {
		dst = t.encodeLevel(dst, p, level+1, sc)
	}
	clear(parts) // drop references to the text
	return dst
}

// Decode returns the bytes the ids stand for, concatenated. Unknown ids are
// skipped, as HF does. The result is exact: ids that end inside a multi-byte
// character give a partial character (invalid UTF-8) where HF's decode would
// substitute U+FFFD, so that Decode(a)+Decode(b) == Decode(a+b) always.
func (t *BPE) Decode(ids []uint32) string {
	buf := t.AppendDecode(make([]byte, 0, len(ids)*4), ids)
	return unsafe.String(unsafe.SliceData(buf), len(buf))
}

// AppendDecode appends the bytes of ids to dst, as Decode does.
func (t *BPE) AppendDecode(dst []byte, ids []uint32) []byte {
	for _, id := range ids {
		if int(id) < len(t.pieces) {
			dst = append(dst, t.pieces[id]...)
		}
	}
	return dst
}

// LoadHF loads a tokenizer.json file, plain or zstd-compressed (name ending
// in .zst). The tokenizer's name is path.
func LoadHF(path string) (*HF, error) {
	data, err := readMaybeZstd(path)
	if err != nil {
		return nil, err
	}
	t, err := FromHFJSON(data, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// readMaybeZstd reads a file, decompressing it when its name ends in .zst.
func readMaybeZstd(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open tokenizer: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".zst") {
		zr, err := zstd.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: zstd: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// hfFile is the part of tokenizer.json the loader reads.
type hfFile struct {
	AddedTokens  []hfAddedToken  `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Decoder      json.RawMessage `json:"decoder"`
	Model        struct {
		Type                    string          `json:"type"`
		Dropout                 *float64        `json:"dropout"`
		UnkToken                *string         `json:"unk_token"`
		FuseUnk                 bool            `json:"fuse_unk"`
		ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
		ByteFallback            bool            `json:"byte_fallback"`
		IgnoreMerges            bool            `json:"ignore_merges"`
		Vocab                   json.RawMessage `json:"vocab"`
		Merges                  json.RawMessage `json:"merges"`
	} `json:"model"`
}

type hfAddedToken struct {
	ID         uint32 `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// ErrUnsupported is wrapped by load errors for tokenizer.json features this
// package does not implement.
var ErrUnsupported = errors.New("unsupported tokenizer feature")

func newBPE(name string) *BPE {
	t := &BPE{name: name}
	t.scratch.New = func() any { return new(scratch) }
	return t
}

// FromHFJSON builds a tokenizer from the contents of a tokenizer.json.
func FromHFJSON(data []byte, name string) (*HF, error) {
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse tokenizer.json: %w", err)
	}
	t := newBPE(name)
	var err error
	if t.norm, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	byteLevel := false
	if t.pre, err = parsePreTokenizer(f.PreTokenizer, &byteLevel); err != nil {
		return nil, err
	}
	if !byteLevel {
		return nil, fmt.Errorf("pre_tokenizer has no ByteLevel step: only byte-level BPE tokenizers are supported: %w", ErrUnsupported)
	}
	if err := checkDecoder(f.Decoder); err != nil {
		return nil, err
	}
	if t.model, t.pieces, err = buildHFModel(&f); err != nil {
		return nil, err
	}
	if t.added, err = newAddedTokens(f.AddedTokens, len(t.pieces)); err != nil {
		return nil, err
	}
	for _, a := range f.AddedTokens {
		for int(a.ID) >= len(t.pieces) {
			t.pieces = append(t.pieces, "")
		}
		t.pieces[a.ID], _ = byteLevelDecode(a.Content)
	}
	return t, nil
}

func buildHFModel(f *hfFile) (*bpeModel, []string, error) {
	m := &f.Model
	switch {
	case m.Type != "BPE" && m.Type != "":
		return nil, nil, fmt.Errorf("model type %q: only BPE is supported: %w", m.Type, ErrUnsupported)
	case m.Dropout != nil && *m.Dropout != 0:
		return nil, nil, fmt.Errorf("model.dropout %v: BPE dropout is not deterministic: %w", *m.Dropout, ErrUnsupported)
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "",
		m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return nil, nil, fmt.Errorf("model continuing_subword_prefix/end_of_word_suffix: %w", ErrUnsupported)
	case m.ByteFallback:
		return nil, nil, fmt.Errorf("model.byte_fallback: %w", ErrUnsupported)
	}
	vocab, err := scanVocab(m.Vocab)
	if err != nil {
		return nil, nil, fmt.Errorf("model.vocab: %w", err)
	}
	if len(vocab) == 0 {
		return nil, nil, errors.New("model.vocab is empty or missing")
	}
	maxID := uint32(0)
	for _, id := range vocab {
		maxID = max(maxID, id)
	}
	if limit := maxTokenID(len(vocab) + len(f.AddedTokens)); maxID > limit {
		return nil, nil, fmt.Errorf("model.vocab has id %d, above %d: ids must be dense", maxID, limit)
	}
	merges, err := scanMerges(m.Merges)
	if err != nil {
		return nil, nil, fmt.Errorf("model.merges: %w", err)
	}
	bm := &bpeModel{
		merges:       make(map[uint64]merge, len(merges)),
		vocab:        make(map[string]uint32, len(vocab)),
		ignoreMerges: m.IgnoreMerges,
	}
	pieces := make([]string, maxID+1)
	for tok, id := range vocab {
		raw, ok := byteLevelDecode(tok)
		pieces[id] = raw
		if ok {
			bm.vocab[raw] = id
		}
	}
	for b := 0; b < 256; b++ {
		bm.byteID[b], bm.byteOK[b] = vocab[string(byteToRune[b])]
	}
	// A byte without a token becomes unk_token when there is one (fused
	// with its neighbours under fuse_unk), else it is dropped, as in HF.
	if m.UnkToken != nil {
		unk, ok := vocab[*m.UnkToken]
		if !ok {
			return nil, nil, fmt.Errorf("model.unk_token %q is not in model.vocab", *m.UnkToken)
		}
		bm.fuseUnk = m.FuseUnk
		for b := 0; b < 256; b++ {
			if !bm.byteOK[b] {
				bm.byteID[b], bm.byteOK[b], bm.missing[b] = unk, true, true
			}
		}
	}
	for rank, mg := range merges {
		a, b := mg[0], mg[1]
		ia, oka := vocab[a]
		ib, okb := vocab[b]
		ic, okc := vocab[a+b]
		if !oka || !okb || !okc {
			return nil, nil, fmt.Errorf("model.merges[%d] (%q %q): token not in model.vocab", rank, a, b)
		}
		if _, dup := bm.merges[pairKey(ia, ib)]; !dup {
			bm.merges[pairKey(ia, ib)] = merge{rank: uint32(rank), id: ic}
		}
	}
	return bm, pieces, nil
}

// maxTokenID bounds token ids for a vocabulary of n tokens: real vocabularies
// are dense, and the bound keeps a malformed file from allocating gigabytes.
func maxTokenID(n int) uint32 { return uint32(min(4*n+1024, 1<<24)) }

// cutMerge splits a merge given as "a b".
func cutMerge(m string) (string, string, bool) {
	a, b, ok := strings.Cut(m, " ")
	if !ok || a == "" || b == "" || strings.Contains(b, " ") {
		return "", "", false
	}
	return a, b, true
}

// typed is the "type" field every normalizer, pre-tokenizer and decoder has.
type typed struct {
	Type string `json:"type"`
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

func parseNormalizer(raw json.RawMessage) ([]func(string) string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var n struct {
		typed
		Normalizers []json.RawMessage `json:"normalizers"`
		Prepend     string            `json:"prepend"`
		Pattern     struct {
			String *string `json:"String"`
			Regex  *string `json:"Regex"`
		} `json:"pattern"`
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch n.Type {
	case "Sequence":
		var out []func(string) string
		for i, sub := range n.Normalizers {
			fs, err := parseNormalizer(sub)
			if err != nil {
				return nil, fmt.Errorf("normalizers[%d]: %w", i, err)
			}
			out = append(out, fs...)
		}
		return out, nil
	case "NFC":
		return []func(string) string{norm.NFC.String}, nil
	case "NFD":
		return []func(string) string{norm.NFD.String}, nil
	case "NFKC":
		return []func(string) string{norm.NFKC.String}, nil
	case "NFKD":
		return []func(string) string{norm.NFKD.String}, nil
	case "Lowercase":
		return []func(string) string{strings.ToLower}, nil
	case "Prepend":
		p := n.Prepend
		return []func(string) string{func(s string) string { return p + s }}, nil
	case "Replace":
		if n.Pattern.String == nil {
			return nil, fmt.Errorf("normalizer Replace with a Regex pattern: %w", ErrUnsupported)
		}
		old, repl := *n.Pattern.String, n.Content
		if old == "" {
			return nil, errors.New("normalizer Replace: empty pattern")
		}
		return []func(string) string{func(s string) string { return strings.ReplaceAll(s, old, repl) }}, nil
	}
	return nil, fmt.Errorf("normalizer type %q: %w", n.Type, ErrUnsupported)
}

func checkDecoder(raw json.RawMessage) error {
	if isNull(raw) {
		return fmt.Errorf("decoder is missing: a byte-level tokenizer needs the ByteLevel decoder: %w", ErrUnsupported)
	}
	var d struct {
		typed
		Decoders []json.RawMessage `json:"decoders"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("decoder: %w", err)
	}
	switch d.Type {
	case "ByteLevel":
		return nil
	case "Sequence":
		if len(d.Decoders) == 1 {
			return checkDecoder(d.Decoders[0])
		}
	}
	return fmt.Errorf("decoder type %q: only ByteLevel is supported: %w", d.Type, ErrUnsupported)
}

// preStep is one pre-tokenizer: it splits piece and appends the parts.
type preStep interface {
	apply(dst []string, piece string, sc *scratch) []string
}

// scratch holds the buffers of one Encode call.
type scratch struct {
	ids    []uint32
	levels [][]string
	spans  []span
	parts  []part
}

// part is a match or a gap between matches of a Split pattern.
type part struct {
	span
	match bool
}

func parsePreTokenizer(raw json.RawMessage, byteLevel *bool) ([]preStep, error) {
	if isNull(raw) {
		return nil, nil
	}
	var p struct {
		typed
		PreTokenizers []json.RawMessage `json:"pretokenizers"`
		Pattern       struct {
			String *string `json:"String"`
			Regex  *string `json:"Regex"`
		} `json:"pattern"`
		Behavior         string `json:"behavior"`
		Invert           bool   `json:"invert"`
		AddPrefixSpace   bool   `json:"add_prefix_space"`
		UseRegex         *bool  `json:"use_regex"`
		IndividualDigits bool   `json:"individual_digits"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	switch p.Type {
	case "Sequence":
		var out []preStep
		for i, sub := range p.PreTokenizers {
			steps, err := parsePreTokenizer(sub, byteLevel)
			if err != nil {
				return nil, fmt.Errorf("pretokenizers[%d]: %w", i, err)
			}
			out = append(out, steps...)
		}
		return out, nil
	case "Split":
		var m matcher
		var err error
		switch {
		case p.Pattern.Regex != nil:
			m, err = newMatcher(*p.Pattern.Regex)
		case p.Pattern.String != nil && *p.Pattern.String != "":
			m, err = newRegexMatcher(regexp2Escape(*p.Pattern.String))
		default:
			err = errors.New("pre_tokenizer Split: pattern has neither String nor Regex")
		}
		if err != nil {
			return nil, err
		}
		b, ok := splitBehaviors[p.Behavior]
		if !ok {
			return nil, fmt.Errorf("pre_tokenizer Split behavior %q: %w", p.Behavior, ErrUnsupported)
		}
		return []preStep{&splitStep{m: m, behavior: b, invert: p.Invert}}, nil
	case "ByteLevel":
		*byteLevel = true
		// use_regex defaults to true in the HF library.
		useRegex := p.UseRegex == nil || *p.UseRegex
		var steps []preStep
		if p.AddPrefixSpace {
			steps = append(steps, prefixSpaceStep{})
		}
		if useRegex {
			steps = append(steps, &splitStep{m: gpt2Matcher{}, behavior: splitIsolated})
		}
		return steps, nil
	case "Digits": // Rust char::is_numeric: general category N
		return []preStep{&splitStep{m: runMatcher{in: unicode.IsNumber, max: map[bool]int{true: 1, false: 0}[p.IndividualDigits]}, behavior: splitIsolated}}, nil
	}
	return nil, fmt.Errorf("pre_tokenizer type %q: %w", p.Type, ErrUnsupported)
}

func regexp2Escape(s string) string {
	var sb strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\*+?|{}[]()^$.# -`, r) || unicode.IsSpace(r) {
			sb.WriteByte('\\')
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

type splitBehavior int

const (
	splitIsolated splitBehavior = iota
	splitRemoved
	splitMergedWithPrevious
	splitMergedWithNext
	splitContiguous
)

var splitBehaviors = map[string]splitBehavior{
	"Isolated": splitIsolated, "Removed": splitRemoved,
	"MergedWithPrevious": splitMergedWithPrevious, "MergedWithNext": splitMergedWithNext,
	"Contiguous": splitContiguous,
}

// splitStep is the Split pre-tokenizer.
type splitStep struct {
	m        matcher
	behavior splitBehavior
	invert   bool
}

func (s *splitStep) apply(dst []string, piece string, sc *scratch) []string {
	matches := s.m.findAll(sc.spans[:0], piece)
	sc.spans = matches
	// parts are the matches and the gaps between them, in order.
	parts := sc.parts[:0]
	prev := 0
	for _, m := range matches {
		if m.start > prev {
			parts = append(parts, part{span{prev, m.start}, s.invert})
		}
		parts = append(parts, part{m, !s.invert})
		prev = m.end
	}
	if prev < len(piece) {
		parts = append(parts, part{span{prev, len(piece)}, s.invert})
	}
	sc.parts = parts
	switch s.behavior {
	case splitIsolated:
		for _, p := range parts {
			dst = append(dst, piece[p.start:p.end])
		}
	case splitRemoved:
		for _, p := range parts {
			if !p.match {
				dst = append(dst, piece[p.start:p.end])
			}
		}
	case splitMergedWithPrevious:
		// A match joins the part before it.
		start := 0
		for i, p := range parts {
			if i+1 < len(parts) && parts[i+1].match {
				continue
			}
			dst = append(dst, piece[start:p.end])
			start = p.end
		}
	case splitMergedWithNext:
		// A match joins the part after it.
		start := 0
		for _, p := range parts {
			if p.match {
				continue
			}
			dst = append(dst, piece[start:p.end])
			start = p.end
		}
		if start < len(piece) {
			dst = append(dst, piece[start:])
		}
	case splitContiguous:
		// Consecutive matches join.
		start := 0
		for i, p := range parts {
			if p.match && i+1 < len(parts) && parts[i+1].match {
				continue
			}
			dst = append(dst, piece[start:p.end])
			start = p.end
		}
	}
	return dst
}

// prefixSpaceStep is ByteLevel's add_prefix_space: every piece that does not
// start with a space gets one.
type prefixSpaceStep struct{}

func (prefixSpaceStep) apply(dst []string, piece string, _ *scratch) []string {
	if !strings.HasPrefix(piece, " ") {
		piece = " " + piece
	}
	return append(dst, piece)
}

// addedTokens finds added tokens in text: the leftmost match, longest on
// ties, as the HF library's Aho-Corasick (LeftmostLongest) does.
type addedTokens struct {
	ids map[string]addedToken
	// lens lists, per first byte, the distinct token lengths, longest first.
	lens [256][]int
}

type addedToken struct {
	id                         uint32
	lstrip, rstrip, singleWord bool
}

func newAddedTokens(list []hfAddedToken, vocabSize int) (*addedTokens, error) {
	a := &addedTokens{ids: make(map[string]addedToken, len(list))}
	for i, t := range list {
		if t.Content == "" {
			return nil, fmt.Errorf("added_tokens[%d] (id %d): empty content", i, t.ID)
		}
		if limit := maxTokenID(len(list) + vocabSize); t.ID > limit {
			return nil, fmt.Errorf("added_tokens[%d]: id %d is above %d: ids must be dense", i, t.ID, limit)
		}
		a.ids[t.Content] = addedToken{id: t.ID, lstrip: t.LStrip, rstrip: t.RStrip, singleWord: t.SingleWord}
		c := t.Content[0]
		if !slices.Contains(a.lens[c], len(t.Content)) {
			a.lens[c] = append(a.lens[c], len(t.Content))
		}
	}
	for c := range a.lens {
		slices.SortFunc(a.lens[c], func(x, y int) int { return y - x })
	}
	return a, nil
}

// find returns the first added token in text as [start, end) and its id;
// start == end == len(text) when there is none. lstrip/rstrip tokens take
// the whitespace beside them.
func (a *addedTokens) find(text string) (start, end int, id uint32) {
	for i := 0; i < len(text); i++ {
		lens := a.lens[text[i]]
		if lens == nil {
			continue
		}
		for _, n := range lens {
			if i+n > len(text) {
				continue
			}
			tok, ok := a.ids[text[i:i+n]]
			if !ok {
				continue
			}
			s, e := i, i+n
			if tok.singleWord && (s > 0 && isWordByte(text, s, true) || e < len(text) && isWordByte(text, e, false)) {
				continue
			}
			if tok.lstrip {
				s = len(strings.TrimRightFunc(text[:s], unicode.IsSpace))
			}
			if tok.rstrip {
				e = len(text) - len(strings.TrimLeftFunc(text[e:], unicode.IsSpace))
			}
			return s, e, tok.id
		}
	}
	return len(text), len(text), 0
}

// isWordByte reports whether the character just before (before=true) or at
// i is a word character (letter, digit or underscore).
func isWordByte(text string, i int, before bool) bool {
	var r rune
	if before {
		r, _ = utf8.DecodeLastRuneInString(text[:i])
	} else {
		r, _ = utf8.DecodeRuneInString(text[i:])
	}
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}
