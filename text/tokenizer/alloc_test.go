//go:build !race

// The race detector makes sync.Pool drop items at random, so allocation
// guards run without it.

package tokenizer

import "testing"

func TestHFCountTokensNoAllocs(t *testing.T) {
	tok, _ := loadTiny(t)
	text := codeSample
	want := len(tok.Encode(text))
	if got := tok.CountTokens(text); got != want {
		t.Fatalf("CountTokens = %d, len(Encode) = %d", got, want)
	}
	// Warm: the pretoken cache and the pooled buffers are filled.
	if n := testing.AllocsPerRun(20, func() { tok.CountTokens(text) }); n > 0 {
		t.Errorf("warm CountTokens allocates %v times per call", n)
	}
}
