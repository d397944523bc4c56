package cliflags

import (
	"sort"
	"strings"
	"unicode"
)

// Renamer rewrites a library's messages in a CLI's terms: each name it
// knows (a Go field such as Config.URL, or a phrase around one) becomes
// the CLI's name for it (the flag or variable that sets it).
type Renamer struct {
	names map[string]string
	// keys are the names, longest first, so that a phrase is replaced
	// before a name it contains.
	keys []string
}

// NewRenamer returns a Renamer of names (library name → CLI name).
func NewRenamer(names map[string]string) *Renamer {
	r := &Renamer{names: names}
	for k := range names {
		r.keys = append(r.keys, k)
	}
	sort.Slice(r.keys, func(i, j int) bool {
		if len(r.keys[i]) != len(r.keys[j]) {
			return len(r.keys[i]) > len(r.keys[j])
		}
		return r.keys[i] < r.keys[j]
	})
	return r
}

// Rename replaces every whole name of msg it knows (not Config.URL inside
// Config.URLs); a name followed by ": " (a field error's "Field: what is
// wrong") reads "--flag what is wrong".
func (r *Renamer) Rename(msg string) string {
	for _, k := range r.keys {
		if !strings.Contains(msg, k) {
			continue
		}
		var b strings.Builder
		rest := msg
		for {
			i := strings.Index(rest, k)
			if i < 0 {
				b.WriteString(rest)
				break
			}
			end := i + len(k)
			if !wordBoundary(rest, i, end) {
				b.WriteString(rest[:end])
				rest = rest[end:]
				continue
			}
			b.WriteString(rest[:i])
			b.WriteString(r.names[k])
			rest = rest[end:]
			if strings.HasPrefix(rest, ": ") {
				b.WriteByte(' ')
				rest = rest[2:]
			}
		}
		msg = b.String()
	}
	return msg
}

// wordBoundary reports whether s[i:end] is not part of a longer
// identifier.
func wordBoundary(s string, i, end int) bool {
	ident := func(r rune) bool { return r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	if i > 0 && ident(rune(s[i-1])) {
		return false
	}
	return end >= len(s) || !(s[end] == '_' || unicode.IsLetter(rune(s[end])) || unicode.IsDigit(rune(s[end])))
}
