package tokenizer

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// handPatterns are the patterns with a hand-written matcher.
var handPatterns = []struct {
	name, pattern string
}{
	{"cl100k", PatternCL100k},
	{"qwen2", PatternQwen2},
	{"gpt2", patternGPT2},
	{"deepseek-digits", patternDeepSeekDigits},
	{"deepseek-cjk", patternDeepSeekCJK},
	{"deepseek-main", patternDeepSeekMain},
	{"o200k", PatternO200k},
	{"kimi", PatternKimi},
}

var matcherTexts = []string{
	"", " ", "  ", "a", "hello world", "  two  spaces  ", "trailing   ", "\n", " \n ", "\t\t\n \n\t",
	"x  \n  y", "a\r\nb", "  \r\n  \r\n", "foo(bar, baz);\n", "I'm you're we'VE they'LL it'S 'tis",
	"don't'", "''s", "12345 1234567 3.14", "١٢٣ Ⅻ ½", "café naïve", "e\u0301 a\u0301b", "日本語テキストとひらがな中文",
	"😀 emoji🎉", "\u00a0nbsp\u3000ideo", "<|im_start|>user", "a<b>c", "!!!???", " !!!\n\nx", "$x=1;", "\x01\x02 ctl",
	"CamelCase snake_case", "path/to/file.go:12:3", "123abc abc123", "\u2028line\u2029para", "ｆｕｌｌ　ｗｉｄｔｈ",
	"x\u0300\u0301 \u0300", "-foo +bar @baz #qux", "‘quote’ “dq” «g»", "≈≠∞ ∑ᵢ", "a\u200bb", "\ufeffbom",
	"HTTPServer getHTTPResponse XMLHttpRequest IOError", "ǅemal ǈ ǋ", "ʰʲ ˈstress", "DON'T Don't don'T", "a/b//c\n/", "漢字かなカナ한글 中文English混合",
	"ÀB\u0301c \u0301\u0301A", "\u0301", "x\u0301", "ABC\u0300", "aB", "Ab", "ABc", " ABC'S", "\u02b0A", "A\u02b0", "\u02b0\u02b0b",
}

// regexpComparable reports whether regexp2 can serve as the reference for s:
// it lacks Oniguruma's case folding of 'ſ' (U+017F) to 's' in (?i:'s), which
// the hand-written matchers follow (checked against the Rust library by the
// reference fixtures instead).
func regexpComparable(s string) bool { return !strings.Contains(s, "ſ") }

func matchStrings(m matcher, s string) []string {
	var out []string
	for _, sp := range m.findAll(nil, s) {
		out = append(out, s[sp.start:sp.end])
	}
	return out
}

// TestHandMatchersAgreeWithRegexp checks each hand-written matcher against
// the generic regex engine on the same pattern.
func TestHandMatchersAgreeWithRegexp(t *testing.T) {
	t.Parallel()
	for _, hp := range handPatterns {
		t.Run(hp.name, func(t *testing.T) {
			hand, err := newMatcher(hp.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := hand.(*regexMatcher); ok {
				t.Fatalf("pattern %s has no hand-written matcher", hp.name)
			}
			re, err := newRegexMatcher(hp.pattern)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range append(matcherTexts, codeSample, englishSample) {
				if !regexpComparable(s) {
					continue
				}
				got, want := matchStrings(hand, s), matchStrings(re, s)
				if !slices.Equal(got, want) {
					t.Errorf("%q:\nhand   %q\nregexp %q", clip(s), got, want)
				}
			}
		})
	}
}

func FuzzMatchers(f *testing.F) {
	for _, s := range matcherTexts {
		f.Add(s)
	}
	type pair struct {
		name        string
		hand, regex matcher
	}
	var pairs []pair
	for _, hp := range handPatterns {
		hand, err := newMatcher(hp.pattern)
		if err != nil {
			f.Fatal(err)
		}
		re, err := newRegexMatcher(hp.pattern)
		if err != nil {
			f.Fatal(err)
		}
		pairs = append(pairs, pair{hp.name, hand, re})
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || !regexpComparable(s) {
			return
		}
		for _, p := range pairs {
			got, want := matchStrings(p.hand, s), matchStrings(p.regex, s)
			if !slices.Equal(got, want) {
				t.Errorf("%s on %q:\nhand   %q\nregexp %q", p.name, s, got, want)
			}
		}
	})
}

func TestTranslateOnig(t *testing.T) {
	t.Parallel()
	got := translateOnig(`[\p{Lu}\p{M}&&[^\p{Han}]]+`)
	if want := `[\p{Lu}\p{M}-[\p{Han}]]+`; got != want {
		t.Fatalf("translateOnig = %q, want %q", got, want)
	}
	for _, p := range []string{PatternO200k, PatternKimi} {
		if _, err := newMatcher(p); err != nil {
			t.Errorf("newMatcher(%s): %v", clip(p), err)
		}
	}
}
