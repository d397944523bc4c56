package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// roundTripTexts are the texts every tokenizer's round-trip test covers.
var roundTripTexts = []string{
	"",
	" ",
	"a",
	"hello world",
	"  leading and trailing spaces  ",
	"tabs\tand\nnewlines\r\n\r\n\n\n",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n",
	"x := map[string]int{\"a\": 1, \"b\": 22}",
	"I'm sure they've said it's theirs, we'll see; you'd know.",
	"1234567890 3.14159 -42 1e10 0xFF",
	"café naïve résumé Ångström",
	"日本語のテキストと中文文本",
	"emoji 😀🎉👩‍👩‍👧 flags 🇩🇪",
	"<|im_start|>user\nhi<|im_end|>",
	"      deeply    indented   \t\t code",
	"!!!??? ... --- ===>>> {{{}}}",
	"MixedCASE camelCase snake_case SCREAMING_CASE kebab-case",
	"\x00\x01\x7f",
}

func TestBuiltinRoundTrip(t *testing.T) {
	t.Parallel()
	tok := Builtin()
	for _, s := range append(roundTripTexts, "\xff\xfe invalid \xc3", strings.Repeat("long", 1000)) {
		t.Run(clip(s), func(t *testing.T) {
			ids := tok.Encode(s)
			if got := tok.Decode(ids); got != s {
				t.Fatalf("Decode(Encode(%q)) = %q", s, got)
			}
			if n := tok.CountTokens(s); n != len(ids) {
				t.Fatalf("CountTokens(%q) = %d, len(Encode) = %d", s, n, len(ids))
			}
			// Each token decodes on its own to a non-empty piece: pieces
			// concatenate to the text, which is what block synthesis relies on.
			var sb strings.Builder
			for _, id := range ids {
				p := tok.Decode([]uint32{id})
				if p == "" || p == "\uFFFD" && !strings.Contains(s, "\uFFFD") {
					t.Fatalf("token %#x of %q decodes to %q", id, s, p)
				}
				sb.WriteString(p)
			}
			if sb.String() != s {
				t.Fatalf("concatenated pieces = %q, want %q", sb.String(), s)
			}
		})
	}
}

func TestBuiltinInterface(t *testing.T) {
	t.Parallel()
	var tok Tokenizer = Builtin()
	if tok.Name() != "builtin" || !tok.Approximate() {
		t.Fatalf("Name() = %q, Approximate() = %v; want builtin, true", tok.Name(), tok.Approximate())
	}
	if got, want := Count(tok, "hello world"), len(tok.Encode("hello world")); got != want {
		t.Fatalf("Count = %d, want %d", got, want)
	}
}

// TestBuiltinPrefixStable checks the property a prefix-cache simulator relies
// on: Encode(a+b) begins with Encode(a) minus the tokens of a's last pretoken.
func TestBuiltinPrefixStable(t *testing.T) {
	t.Parallel()
	tok := Builtin()
	text := strings.Join(roundTripTexts, " ") + codeSample
	for cut := 0; cut <= len(text); cut++ {
		a := text[:cut]
		full := tok.Encode(text)
		pa := tok.Encode(a)
		// Drop the tokens of a's last pretoken.
		keep := len(pa)
		if cut > 0 {
			last := 0
			for i := 0; i < cut; {
				last = i
				i = builtinPretokenEnd(a, i)
			}
			keep = tok.CountTokens(a[:last])
		}
		if !slices.Equal(full[:keep], pa[:keep]) {
			t.Fatalf("cut %d: Encode(a+b) does not start with Encode(a)[:%d]", cut, keep)
		}
	}
}

// TestBuiltinDensity checks that token counts look like those of a real BPE
// vocabulary: about 4 bytes per token on English prose, about 3 on code
// (real BPE vocabularies give about 4.5 and 3.5).
func TestBuiltinDensity(t *testing.T) {
	t.Parallel()
	tok := Builtin()
	for _, tc := range []struct {
		name     string
		text     string
		min, max float64
	}{
		{"english", englishSample, 3.5, 5.0},
		{"code", codeSample, 2.5, 4.5},
		{"own source", ownSource(t), 2.5, 4.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bpt := float64(len(tc.text)) / float64(tok.CountTokens(tc.text))
			t.Logf("%.2f bytes/token", bpt)
			if bpt < tc.min || bpt > tc.max {
				t.Fatalf("%.2f bytes per token, want %.1f–%.1f", bpt, tc.min, tc.max)
			}
		})
	}
}

func TestBuiltinDecodeInvalidIDs(t *testing.T) {
	t.Parallel()
	tok := Builtin()
	for _, id := range []uint32{0, 1 << 30, 2 << 30, 3 << 30, 3<<30 | 1<<26 | 1<<24, 3<<30 | 3<<28, 0b11111, 1 | 2<<10} {
		if got := tok.Decode([]uint32{id}); got != "\uFFFD" {
			t.Errorf("Decode(%#x) = %q, want U+FFFD", id, got)
		}
	}
}

func TestBuiltinNoAllocs(t *testing.T) {
	tok := Builtin()
	text := codeSample
	buf := make([]uint32, 0, len(text))
	if n := testing.AllocsPerRun(10, func() { _ = tok.CountTokens(text) }); n != 0 {
		t.Errorf("CountTokens allocates %v times", n)
	}
	if n := testing.AllocsPerRun(10, func() { buf = tok.AppendEncode(buf[:0], text) }); n != 0 {
		t.Errorf("AppendEncode into a large enough slice allocates %v times", n)
	}
}

func FuzzBuiltinRoundTrip(f *testing.F) {
	for _, s := range roundTripTexts {
		f.Add(s)
	}
	tok := Builtin()
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		if got := tok.Decode(ids); got != s {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
		if n := tok.CountTokens(s); n != len(ids) {
			t.Fatalf("CountTokens = %d, len(Encode) = %d", n, len(ids))
		}
		if utf8.ValidString(s) && len(s) > 0 && len(ids) == 0 {
			t.Fatalf("no tokens for %q", s)
		}
	})
}

func BenchmarkBuiltin(b *testing.B) {
	text := codeText(b, 1<<20)
	tok := Builtin()
	b.Run("Encode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			_ = tok.Encode(text)
		}
	})
	b.Run("AppendEncode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(text)))
		buf := make([]uint32, 0, len(text))
		for b.Loop() {
			buf = tok.AppendEncode(buf[:0], text)
		}
	})
	b.Run("CountTokens", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			_ = tok.CountTokens(text)
		}
	})
	b.Run("Decode", func(b *testing.B) {
		ids := tok.Encode(text)
		b.ReportAllocs()
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			_ = tok.Decode(ids)
		}
	})
}

// clip shortens s for a subtest name.
func clip(s string) string {
	if len(s) > 24 {
		s = s[:24]
	}
	return s
}

// ownSource returns the Go source of this package: real code-like text.
func ownSource(tb testing.TB) string {
	tb.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		tb.Fatalf("glob *.go: %v (%d files)", err, len(files))
	}
	slices.Sort(files)
	var sb strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		sb.Write(b)
	}
	return sb.String()
}

// codeText returns about n bytes of code-like text (this package's source
// and the samples, repeated).
func codeText(tb testing.TB, n int) string {
	tb.Helper()
	unit := ownSource(tb) + codeSample + englishSample
	return strings.Repeat(unit, n/len(unit)+1)[:n]
}

const englishSample = `The quick brown fox jumps over the lazy dog. When the build failed for the
third time that afternoon, she opened the log and scrolled back to the first error: a missing
import in a file nobody had touched in months. It turned out that a dependency had been upgraded
overnight, and its maintainers had renamed a package without keeping the old name as an alias.
The fix was a one-line change, but finding it took most of an hour, which is why the team later
decided to pin every dependency and to review upgrades in a separate pull request. Good tools
make such mistakes cheap to find; good habits make them rare.`

const codeSample = `package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Handler serves the health endpoint and reports the build version.
type Handler struct {
	Version string
	Started time.Time
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	uptime := time.Since(h.Started).Round(time.Second)
	fmt.Fprintf(w, "ok version=%s uptime=%s\n", h.Version, uptime)
}

def parse_config(path: str) -> dict[str, int]:
    with open(path) as f:
        data = json.load(f)
    if "workers" not in data:
        raise ValueError(f"{path}: missing 'workers'")
    return {k: int(v) for k, v in data.items()}

$ go test ./... 2>&1 | tail -n 3
--- FAIL: TestParse (0.00s)
    parse_test.go:42: got 17, want 18
FAIL	example.com/server	0.012s
`
