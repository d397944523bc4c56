// Package suggest finds the known value nearest to a mistyped one, for
// the "did you mean" of an error message.
package suggest

import "fmt"

// Nearest returns the value of known closest to typed by edit distance
// (case-insensitive), or "" when none is close: within 2 edits, or a third
// of typed's length for a long one. Ties go to the earlier value.
func Nearest(typed string, known []string) string {
	limit := max(2, len([]rune(typed))/3)
	best, bestD := "", limit+1
	for _, k := range known {
		if d := Distance(lower(typed), lower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// DidYouMean returns ` (did you mean "x"?)` for the nearest known value
// (Nearest), or "".
func DidYouMean(typed string, known []string) string {
	if n := Nearest(typed, known); n != "" && n != typed {
		return fmt.Sprintf(" (did you mean %q?)", n)
	}
	return ""
}

// Distance is the Levenshtein distance of a and b, in runes.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func lower(s string) string {
	b := []rune(s)
	for i, r := range b {
		if 'A' <= r && r <= 'Z' {
			b[i] = r + 'a' - 'A'
		}
	}
	return string(b)
}
