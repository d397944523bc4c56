package tokenizer

import "strings"

// byteToRune is GPT-2's byte-level alphabet: printable Latin-1 bytes map to
// themselves, the other 68 bytes to U+0100 upwards, so every byte is a
// visible character in vocab files.
var byteToRune, runeToByte = func() (b2r [256]rune, r2b map[rune]byte) {
	r2b = make(map[rune]byte, 256)
	next := rune(256)
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF {
			b2r[b] = rune(b)
		} else {
			b2r[b] = next
			next++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()

// byteLevelDecode returns the raw bytes a byte-level token stands for, and
// false if tok has a character outside the alphabet; the ByteLevel decoder
// then keeps the token's text as it is.
func byteLevelDecode(tok string) (string, bool) {
	var sb strings.Builder
	sb.Grow(len(tok))
	for _, r := range tok {
		b, ok := runeToByte[r]
		if !ok {
			return tok, false
		}
		sb.WriteByte(b)
	}
	return sb.String(), true
}
