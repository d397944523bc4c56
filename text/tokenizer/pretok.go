package tokenizer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// span is a half-open byte range of a string.
type span struct{ start, end int }

// matcher finds the non-overlapping, leftmost-first matches of a pattern in
// s, as Oniguruma's find_iter does for the HF tokenizers library.
type matcher interface {
	findAll(dst []span, s string) []span
}

// Patterns with a hand-written matcher (exact strings as they appear in
// tokenizer.json files and tiktoken presets).
const (
	// PatternCL100k is the cl100k_base / Llama-3 pre-tokenizer pattern.
	PatternCL100k = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// PatternQwen2 is the Qwen2/Qwen3 pattern: cl100k with single digits.
	PatternQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// PatternO200k is the o200k_base (gpt-4o, gpt-oss) pattern.
	PatternO200k = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// PatternKimi is the Kimi K2 tiktoken.model pattern.
	PatternKimi = `[\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patternGPT2 is the pattern of the ByteLevel pre-tokenizer with use_regex.
	patternGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// DeepSeek-V3's three Split patterns.
	patternDeepSeekDigits = `\p{N}{1,3}`
	patternDeepSeekCJK    = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"
	patternDeepSeekMain   = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
)

// newMatcher returns the hand-written matcher for a known pattern, else a
// regexp2 (.NET syntax, close to Oniguruma) matcher.
func newMatcher(pattern string) (matcher, error) {
	switch pattern {
	case PatternCL100k:
		return gpt4Matcher{maxDigits: 3}, nil
	case PatternQwen2:
		return gpt4Matcher{maxDigits: 1}, nil
	case patternGPT2:
		return gpt2Matcher{}, nil
	case patternDeepSeekDigits:
		return runMatcher{in: unicode.IsNumber, max: 3}, nil
	case patternDeepSeekCJK:
		return runMatcher{in: isDeepSeekCJK}, nil
	case patternDeepSeekMain:
		return deepseekMatcher{}, nil
	case PatternO200k:
		return o200kMatcher{}, nil
	case PatternKimi:
		return o200kMatcher{kimi: true}, nil
	}
	return newRegexMatcher(pattern)
}

// regexMatcher is the fallback for patterns without a hand-written matcher.
type regexMatcher struct{ re *regexp2.Regexp }

func newRegexMatcher(pattern string) (*regexMatcher, error) {
	re, err := regexp2.Compile(translateOnig(pattern), regexp2.Unicode)
	if err != nil {
		return nil, fmt.Errorf("compile pre-tokenizer pattern %q: %w", pattern, err)
	}
	return &regexMatcher{re: re}, nil
}

// translateOnig rewrites Oniguruma syntax that .NET regexes lack: class
// intersection `[A&&[^B]]` as the subtraction `[A-[B]]`.
func translateOnig(p string) string {
	const inter = "&&[^"
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		if i+len(inter) <= len(p) && p[i:i+len(inter)] == inter {
			out = append(out, "-["...)
			i += len(inter) - 1
			continue
		}
		out = append(out, p[i])
	}
	return string(out)
}

func (m *regexMatcher) findAll(dst []span, s string) []span {
	// regexp2 reports rune indexes; offs maps them to byte offsets.
	runes := make([]rune, 0, len(s))
	offs := make([]int, 0, len(s)+1)
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		runes = append(runes, r)
		offs = append(offs, i)
		i += w
	}
	offs = append(offs, len(s))
	mt, err := m.re.FindRunesMatch(runes)
	for err == nil && mt != nil {
		start, end := offs[mt.Index], offs[mt.Index+mt.Length]
		if end > start {
			dst = append(dst, span{start, end})
		}
		mt, err = m.re.FindNextMatch(mt)
	}
	return dst
}

// Character classes for the hand-written matchers.
const (
	ccOther  = iota // none of the below
	ccLetter        // \p{L}
	ccNumber        // \p{N}
	ccSpace         // \s
	ccNL            // \r or \n (also \s)
)

var asciiClass = func() (t [128]uint8) {
	for c := range t {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			t[c] = ccLetter
		case c >= '0' && c <= '9':
			t[c] = ccNumber
		case c == '\r' || c == '\n':
			t[c] = ccNL
		case c == ' ', c == '\t', c == '\v', c == '\f':
			t[c] = ccSpace
		}
	}
	return t
}()

// classAt returns the class and width of the character at s[i].
func classAt(s string, i int) (uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	switch {
	case unicode.IsLetter(r):
		return ccLetter, w
	case unicode.IsNumber(r):
		return ccNumber, w
	case unicode.IsSpace(r):
		return ccSpace, w
	}
	return ccOther, w
}

func isSpaceClass(c uint8) bool { return c == ccSpace || c == ccNL }

// matchSpaces matches `\s*[\r\n]+|\s+(?!\S)|\s+` (without the first
// alternative unless nl) at i, where s[i] is whitespace; it returns the end of
// the match.
func matchSpaces(s string, i int, nl bool) int {
	j, lastNL := i, -1
	for j < len(s) {
		c, w := classAt(s, j)
		if !isSpaceClass(c) {
			break
		}
		if c == ccNL {
			lastNL = j + w
		}
		j += w
	}
	if nl && lastNL >= 0 {
		return lastNL // \s*[\r\n]+
	}
	if j == len(s) {
		return j // \s+(?!\S) at the end
	}
	// \s+(?!\S): give back the last whitespace character if that leaves one.
	_, w := utf8.DecodeLastRuneInString(s[i:j])
	if j-w > i {
		return j - w
	}
	return j // \s+
}

// matchContraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at i and returns the
// end, or -1. Like Oniguruma's case folding, 'ſ' (U+017F) counts as 's'.
func matchContraction(s string, i int) int {
	if s[i] != '\'' || i+1 >= len(s) {
		return -1
	}
	if strings.HasPrefix(s[i+1:], "ſ") {
		return i + 3
	}
	switch s[i+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2]|0x20 == 'e' {
			return i + 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2]|0x20 == 'l' {
			return i + 3
		}
	}
	return -1
}

// gpt4Matcher matches PatternCL100k (maxDigits 3) and PatternQwen2 (1).
type gpt4Matcher struct{ maxDigits int }

func (m gpt4Matcher) findAll(dst []span, s string) []span {
	for i := 0; i < len(s); {
		end := m.matchAt(s, i)
		dst = append(dst, span{i, end})
		i = end
	}
	return dst
}

// matchAt returns the end of the match at i; every position matches.
func (m gpt4Matcher) matchAt(s string, i int) int {
	if e := matchContraction(s, i); e >= 0 {
		return e
	}
	c, w := classAt(s, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c == ccLetter || (c == ccOther || c == ccSpace) && i+w < len(s) {
		j := i + w
		if c != ccLetter {
			if c2, _ := classAt(s, j); c2 != ccLetter {
				j = -1
			}
		}
		if j >= 0 {
			for j < len(s) {
				c2, w2 := classAt(s, j)
				if c2 != ccLetter {
					break
				}
				j += w2
			}
			return j
		}
	}
	switch c {
	case ccNumber: // \p{N}{1,maxDigits}
		j := i + w
		for n := 1; n < m.maxDigits && j < len(s); n++ {
			c2, w2 := classAt(s, j)
			if c2 != ccNumber {
				break
			}
			j += w2
		}
		return j
	case ccOther:
		return matchPunct(s, i+w)
	}
	if s[i] == ' ' && i+1 < len(s) {
		if c2, _ := classAt(s, i+1); c2 == ccOther {
			return matchPunct(s, i+1)
		}
	}
	return matchSpaces(s, i, true)
}

// matchPunct continues ` ?[^\s\p{L}\p{N}]+[\r\n]*` from j (just past one
// matched character, or at the first one after the optional space).
func matchPunct(s string, j int) int {
	for j < len(s) {
		c, w := classAt(s, j)
		if c != ccOther {
			break
		}
		j += w
	}
	for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
		j++
	}
	return j
}

// gpt2Matcher matches patternGPT2.
type gpt2Matcher struct{}

func (gpt2Matcher) findAll(dst []span, s string) []span {
	for i := 0; i < len(s); {
		end := gpt2MatchAt(s, i)
		dst = append(dst, span{i, end})
		i = end
	}
	return dst
}

func gpt2MatchAt(s string, i int) int {
	if s[i] == '\'' && i+1 < len(s) {
		switch s[i+1] {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v':
			if i+2 < len(s) && s[i+2] == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2] == 'l' {
				return i + 3
			}
		}
	}
	j := i
	if s[i] == ' ' && i+1 < len(s) {
		if c, _ := classAt(s, i+1); !isSpaceClass(c) {
			j = i + 1
		}
	}
	c, w := classAt(s, j)
	if isSpaceClass(c) {
		return matchSpaces(s, i, false)
	}
	j += w
	for j < len(s) {
		c2, w2 := classAt(s, j)
		if c2 != c {
			break
		}
		j += w2
	}
	return j
}

// runMatcher matches runs of characters in a set, of at most max characters
// when max > 0.
type runMatcher struct {
	in  func(rune) bool
	max int
}

func (m runMatcher) findAll(dst []span, s string) []span {
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if !m.in(r) {
			i += w
			continue
		}
		j, n := i+w, 1
		for j < len(s) && (m.max == 0 || n < m.max) {
			r2, w2 := utf8.DecodeRuneInString(s[j:])
			if !m.in(r2) {
				break
			}
			j += w2
			n++
		}
		dst = append(dst, span{i, j})
		i = j
	}
	return dst
}

func isDeepSeekCJK(r rune) bool {
	return r >= 0x4e00 && r <= 0x9fa5 || r >= 0x3040 && r <= 0x309f || r >= 0x30a0 && r <= 0x30ff
}

// deepseekMatcher matches patternDeepSeekMain:
//
//	[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
//	|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
//	| ?[\p{P}\p{S}]+[\r\n]*
//	|\s*[\r\n]+|\s+(?!\S)|\s+
type deepseekMatcher struct{}

// Classes for deepseekMatcher.
const (
	dsOther = iota // none of the below (digits, controls, ...)
	dsLM           // \p{L} or \p{M}
	dsPS           // \p{P} or \p{S}
	dsSpace        // \s
	dsNL           // \r, \n
)

var dsASCII = func() (t [128]uint8) {
	for c := range t {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			t[c] = dsLM
		case c == '\r' || c == '\n':
			t[c] = dsNL
		case c == ' ', c == '\t', c == '\v', c == '\f':
			t[c] = dsSpace
		case c > ' ' && c < 0x7f && !(c >= '0' && c <= '9'):
			t[c] = dsPS
		}
	}
	return t
}()

func dsClassAt(s string, i int) (uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return dsASCII[c], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	switch {
	case unicode.IsLetter(r), unicode.IsMark(r):
		return dsLM, w
	case unicode.IsPunct(r), unicode.IsSymbol(r):
		return dsPS, w
	case unicode.IsSpace(r):
		return dsSpace, w
	}
	return dsOther, w
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func (deepseekMatcher) findAll(dst []span, s string) []span {
	for i := 0; i < len(s); {
		end := dsMatchAt(s, i)
		if end < 0 {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
			continue
		}
		dst = append(dst, span{i, end})
		i = end
	}
	return dst
}

// dsMatchAt returns the end of the deepseekMatcher match at i, or -1.
func dsMatchAt(s string, i int) int {
	c, w := dsClassAt(s, i)
	// ASCII punctuation followed by ASCII letters.
	if s[i] < utf8.RuneSelf && c == dsPS && i+1 < len(s) && isASCIILetter(s[i+1]) {
		j := i + 1
		for j < len(s) && isASCIILetter(s[j]) {
			j++
		}
		return j
	}
	// [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
	if c == dsLM || (c == dsOther || c == dsSpace) && i+w < len(s) {
		j := i + w
		if c != dsLM {
			if c2, _ := dsClassAt(s, j); c2 != dsLM {
				j = -1
			}
		}
		if j >= 0 {
			for j < len(s) {
				c2, w2 := dsClassAt(s, j)
				if c2 != dsLM {
					break
				}
				j += w2
			}
			return j
		}
	}
	// ?[\p{P}\p{S}]+[\r\n]*
	j := -1
	if c == dsPS {
		j = i + w
	} else if s[i] == ' ' && i+1 < len(s) {
		if c2, w2 := dsClassAt(s, i+1); c2 == dsPS {
			j = i + 1 + w2
		}
	}
	if j >= 0 {
		for j < len(s) {
			c2, w2 := dsClassAt(s, j)
			if c2 != dsPS {
				break
			}
			j += w2
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	if c == dsSpace || c == dsNL {
		return matchSpaces(s, i, true)
	}
	return -1
}

// o200kMatcher matches PatternO200k, and PatternKimi when kimi is set:
//
//	([\p{Han}]+|)   (kimi only; Han is then left out of U and L)
//	[^\r\n\p{L}\p{N}]?U*L+C? | [^\r\n\p{L}\p{N}]?U+L*C?
//	| \p{N}{1,3} | ' '?[^\s\p{L}\p{N}]+[\r\n/]* ([\r\n]* for kimi)
//	| \s*[\r\n]+ | \s+(?!\S) | \s+
//
// where U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], L = [\p{Ll}\p{Lm}\p{Lo}\p{M}]
// and C = (?i:'s|'t|'re|'ve|'m|'ll|'d).
type o200kMatcher struct{ kimi bool }

// Character bits for o200kMatcher.
const (
	caseU      = 1 << iota // in U
	caseL                  // in L
	caseP                  // in [^\r\n\p{L}\p{N}] (the optional prefix)
	caseN                  // \p{N}
	caseS                  // \s
	caseLetter             // \p{L}
	caseHan                // \p{Han} (kimi only)
)

func (m o200kMatcher) bitsAt(s string, i int) (uint8, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		switch {
		case c >= 'A' && c <= 'Z':
			return caseU | caseLetter, 1
		case c >= 'a' && c <= 'z':
			return caseL | caseLetter, 1
		case c >= '0' && c <= '9':
			return caseN, 1
		case c == '\r' || c == '\n':
			return caseS, 1
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			return caseS | caseP, 1
		}
		return caseP, 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	var b uint8
	switch {
	case unicode.IsLetter(r):
		switch {
		case unicode.Is(unicode.Lu, r), unicode.Is(unicode.Lt, r):
			b = caseU | caseLetter
		case unicode.Is(unicode.Ll, r):
			b = caseL | caseLetter
		default: // Lm, Lo
			b = caseU | caseL | caseLetter
		}
	case unicode.IsMark(r):
		b = caseU | caseL | caseP
	case unicode.IsNumber(r):
		b = caseN
	case unicode.IsSpace(r):
		b = caseS | caseP
	default:
		b = caseP
	}
	if m.kimi && unicode.Is(unicode.Han, r) {
		b = b&^(caseU|caseL) | caseHan
	}
	return b, w
}

func (m o200kMatcher) findAll(dst []span, s string) []span {
	for i := 0; i < len(s); {
		end := m.matchAt(s, i)
		if end < 0 {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
			continue
		}
		dst = append(dst, span{i, end})
		i = end
	}
	return dst
}

// run returns the end of the run of characters with any of bits from j.
func (m o200kMatcher) run(s string, j int, bits uint8) int {
	for j < len(s) {
		b, w := m.bitsAt(s, j)
		if b&bits == 0 {
			break
		}
		j += w
	}
	return j
}

// contraction extends end over an optional contraction.
func contraction(s string, end int) int {
	if end < len(s) {
		if e := matchContraction(s, end); e >= 0 {
			return e
		}
	}
	return end
}

// matchUL matches U*L+C? at j, or returns -1. U* backtracks from its
// longest run to the last position where an L character follows.
func (m o200kMatcher) matchUL(s string, j int) int {
	// Positions where U* may stop, longest first: the end of the U run, then
	// each U character's start going back.
	u := m.run(s, j, caseU)
	if u < len(s) {
		if b, _ := m.bitsAt(s, u); b&caseL != 0 {
			return contraction(s, m.run(s, u, caseL))
		}
	}
	for p := u; p > j; {
		_, w := utf8.DecodeLastRuneInString(s[j:p])
		p -= w
		if b, _ := m.bitsAt(s, p); b&caseL != 0 {
			return contraction(s, m.run(s, p, caseL))
		}
	}
	return -1
}

// matchUpper matches U+L*C? at j, or returns -1.
func (m o200kMatcher) matchUpper(s string, j int) int {
	u := m.run(s, j, caseU)
	if u == j {
		return -1
	}
	return contraction(s, m.run(s, u, caseL))
}

func (m o200kMatcher) matchAt(s string, i int) int {
	b, w := m.bitsAt(s, i)
	if m.kimi && b&caseHan != 0 {
		return m.run(s, i, caseHan)
	}
	prefixed := b&caseP != 0 && i+w < len(s)
	if prefixed {
		if e := m.matchUL(s, i+w); e >= 0 {
			return e
		}
	}
	if e := m.matchUL(s, i); e >= 0 {
		return e
	}
	if prefixed {
		if e := m.matchUpper(s, i+w); e >= 0 {
			return e
		}
	}
	if e := m.matchUpper(s, i); e >= 0 {
		return e
	}
	if b&caseN != 0 {
		j := i + w
		for n := 1; n < 3 && j < len(s); n++ {
			b2, w2 := m.bitsAt(s, j)
			if b2&caseN == 0 {
				break
			}
			j += w2
		}
		return j
	}
	// ' '?[^\s\p{L}\p{N}]+[\r\n/]*
	j := -1
	isOther := func(b uint8) bool { return b&(caseLetter|caseN|caseS) == 0 }
	if isOther(b) {
		j = i + w
	} else if s[i] == ' ' && i+1 < len(s) {
		if b2, w2 := m.bitsAt(s, i+1); isOther(b2) {
			j = i + 1 + w2
		}
	}
	if j >= 0 {
		for j < len(s) {
			b2, w2 := m.bitsAt(s, j)
			if !isOther(b2) {
				break
			}
			j += w2
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n' || !m.kimi && s[j] == '/') {
			j++
		}
		return j
	}
	if b&caseS != 0 {
		return matchSpaces(s, i, true)
	}
	return -1
}
