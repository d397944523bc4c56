package prompttext

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/agentperf/agentperf/internal/atomicfile"
	"github.com/agentperf/agentperf/internal/jsonx"

	"github.com/agentperf/agentperf/text/tokenizer"
)

// maxUnitTokens bounds the token count of one unit; longer units are still
// allowed in the corpus but never used as fillers.
const maxUnitTokens = 1<<16 - 1

// corpus is the tokenized procedural text cut into seam-safe units.
//
// A unit is one or more whole lines that starts at a cut point: a line
// whose first byte is in an allowed head class (see probeHeads) and is not
// blank. Blank lines stick to the unit before them. Every unit ends with
// '\n'. The tokenizer splits the text at every cut point no matter what
// precedes or follows, so for any sequence of units
// Count(u1+u2+...+un) == Count(u1)+...+Count(un); the corpus builder checks
// this on the natural order and the tests check it on random orders.
type corpus struct {
	text   []byte   // the whole generated text
	off    []uint32 // unit i is text[off[i]:off[i+1]]; len = units+1
	esc    []byte   // JSON-escaped text (string body, no quotes)
	escOff []uint32 // unit i is esc[escOff[i]:escOff[i+1]]
	count  []uint16 // tokens of unit i, encoded alone
	tokens int      // sum of count

	// bucket[c] lists the units of exactly c tokens (1 <= c <= 64) for
	// exact fills; below[r] is the largest c <= r with a non-empty bucket.
	bucket [blockTokens + 1][]uint32
	below  [blockTokens + 1]uint8
}

func (c *corpus) units() int { return len(c.count) }

// headClass classifies the first byte of a line.
func headClass(b byte) int {
	switch {
	case b == ' ' || b == '\t':
		return headSpace
	case b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z':
		return headLetter
	case b >= '0' && b <= '9':
		return headDigit
	default:
		return headPunct
	}
}

const (
	headLetter = iota
	headDigit
	headPunct
	headSpace
	numHeads
)

// probeHeads returns, per head class, whether a cut in front of a line of
// that class is seam-safe for tok: for every probe tail a and head b,
// Count(a+b) == Count(a)+Count(b). Letters, digits and punctuation after a
// newline are safe for every GPT-style pre-tokenizer; indentation is safe
// for Hugging Face regex pre-tokenizers (whose newline pretoken never takes
// the following spaces) but not for tokenizers that merge "\n" with the next
// line's indentation, such as the builtin one.
func probeHeads(tok tokenizer.Tokenizer) [numHeads]bool {
	tails := []string{"x\n", "x;\n", "x\n\n", "1\n", "}\n", ")\n\n", "end\n\n\n", "a = b\n", "//\n", "\"\n"}
	heads := [numHeads][]string{
		headLetter: {"foo", "Foo bar", "x := 1", "if err != nil {", "ok  \tpkg"},
		headDigit:  {"1", "2026-01-02T03:04:05Z x", "123456 y", "0x1f"},
		headPunct:  {"}", "// c", "$ go", "-\tx", "+\ty", "@@ -1 +1 @@", "#!/bin", "\"k\": 1", "{", "[x]", ")"},
		headSpace:  {" x", "    return x", "\tx := 1", "  }", "        y", " \tz", "  1", "    // c", "  \"a\": 1"},
	}
	var ok [numHeads]bool
	for h := range heads {
		ok[h] = true
		for _, b := range heads[h] {
			for _, a := range tails {
				if tokenizer.Count(tok, a+b+"\n") != tokenizer.Count(tok, a)+tokenizer.Count(tok, b+"\n") {
					ok[h] = false
				}
			}
		}
	}
	return ok
}

// cutUnits splits text into units at the lines whose head class is allowed.
func cutUnits(text []byte, allowed [numHeads]bool) []uint32 {
	off := []uint32{0}
	for i := 0; i < len(text); {
		j := bytes.IndexByte(text[i:], '\n')
		if j < 0 {
			j = len(text) - i - 1
		}
		if i > 0 && j > 0 && allowed[headClass(text[i])] && !blankLine(text[i:i+j]) {
			off = append(off, uint32(i))
		}
		i += j + 1
	}
	return append(off, uint32(len(text)))
}

func blankLine(l []byte) bool {
	for _, b := range l {
		if b != ' ' && b != '\t' && b != '\r' {
			return false
		}
	}
	return true
}

// countUnits returns the standalone token count of every unit, using all
// CPUs.
func countUnits(tok tokenizer.Tokenizer, text []byte, off []uint32) []int {
	n := len(off) - 1
	counts := make([]int, n)
	workers := max(1, min(runtime.GOMAXPROCS(0), 8))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				counts[i] = tokenizer.Count(tok, string(text[off[i]:off[i+1]]))
			}
		}()
	}
	wg.Wait()
	return counts
}

// verifyNatural encodes the text in chunks of consecutive units and merges
// any two units whose seam is not stable (the chunk count differs from the
// sum of its units), so that the remaining cut points are proven on the
// natural order. It returns the possibly reduced offsets and counts.
func verifyNatural(tok tokenizer.Tokenizer, text []byte, off []uint32, counts []int) ([]uint32, []int, int) {
	const chunk = 256
	n := len(counts)
	type bad struct{ lo, hi int }
	var (
		mu   sync.Mutex
		bads []bad
		wg   sync.WaitGroup
	)
	workers := max(1, min(runtime.GOMAXPROCS(0), 8))
	next := make(chan int, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := range next {
				hi := min(lo+chunk, n)
				sum := 0
				for i := lo; i < hi; i++ {
					sum += counts[i]
				}
				if tokenizer.Count(tok, string(text[off[lo]:off[hi]])) != sum {
					mu.Lock()
					bads = append(bads, bad{lo, hi})
					mu.Unlock()
				}
			}
		}()
	}
	for lo := 0; lo < n; lo += chunk {
		next <- lo
	}
	close(next)
	wg.Wait()
	if len(bads) == 0 {
		return off, counts, 0
	}
	// Find the unstable seams pair by pair and drop those cut points.
	drop := make(map[int]bool)
	for _, b := range bads {
		for i := b.lo; i+1 < b.hi; i++ {
			if tokenizer.Count(tok, string(text[off[i]:off[i+2]])) != counts[i]+counts[i+1] {
				drop[i+1] = true
			}
		}
	}
	newOff := []uint32{0}
	for i := 1; i < len(off)-1; i++ {
		if !drop[i] {
			newOff = append(newOff, off[i])
		}
	}
	newOff = append(newOff, off[len(off)-1])
	// Recount only the merged units.
	newCounts := make([]int, len(newOff)-1)
	j := 0
	for i := range newCounts {
		if j < len(off)-1 && off[j] == newOff[i] && off[j+1] == newOff[i+1] {
			newCounts[i] = counts[j]
		} else {
			newCounts[i] = tokenizer.Count(tok, string(text[newOff[i]:newOff[i+1]]))
		}
		for j < len(off)-1 && off[j] < newOff[i+1] {
			j++
		}
	}
	return newOff, newCounts, len(drop)
}

// finish derives the escaped text, buckets and totals from text, off and
// count.
func (c *corpus) finish() error {
	n := c.units()
	c.esc = make([]byte, 0, len(c.text)+len(c.text)/8)
	c.escOff = make([]uint32, n+1)
	c.tokens = 0
	for i := range c.bucket {
		c.bucket[i] = nil
	}
	for i := 0; i < n; i++ {
		c.escOff[i] = uint32(len(c.esc))
		c.esc = jsonx.AppendStringBody(c.esc, string(c.text[c.off[i]:c.off[i+1]]))
		k := int(c.count[i])
		if k == 0 {
			return fmt.Errorf("synth: corpus unit %d (%q) has no tokens", i, c.text[c.off[i]:c.off[i+1]])
		}
		c.tokens += k
		if k <= blockTokens {
			c.bucket[k] = append(c.bucket[k], uint32(i))
		}
	}
	c.escOff[n] = uint32(len(c.esc))
	if len(c.bucket[1]) == 0 {
		return errors.New("synth: the tokenizer gives no one-token line in the corpus (such as \"}\\n\"), so blocks cannot be filled exactly; use another tokenizer")
	}
	last := 0
	for r := 0; r <= blockTokens; r++ {
		if len(c.bucket[r]) > 0 {
			last = r
		}
		c.below[r] = uint8(last)
	}
	return nil
}

// buildCorpus generates and tokenizes the corpus for tok and seed.
func buildCorpus(tok tokenizer.Tokenizer, seed int64, size int, logf func(string, ...any)) (*corpus, error) {
	text := generateCorpus(seed, size)
	allowed := probeHeads(tok)
	if !allowed[headLetter] && !allowed[headDigit] && !allowed[headPunct] {
		return nil, fmt.Errorf("synth: tokenizer %s merges text across line starts (a prefix-space or sentencepiece-style pre-tokenizer?), so prompts with exact token counts cannot be built with it; use a byte-level BPE tokenizer.json, a tiktoken file or 'builtin'", tok.Name())
	}
	off := cutUnits(text, allowed)
	counts := countUnits(tok, text, off)
	off, counts, merged := verifyNatural(tok, text, off, counts)
	if merged > 0 {
		logf("synth: %d corpus cut points were not stable under tokenizer %s and were merged", merged, tok.Name())
	}
	if len(counts) < max(64, len(text)/400) {
		return nil, fmt.Errorf("synth: tokenizer %s leaves only %d stable cut points in %d bytes of corpus, too few for varied exact blocks", tok.Name(), len(counts), len(text))
	}
	c := &corpus{text: text, off: off, count: make([]uint16, len(counts))}
	for i, k := range counts {
		if k > maxUnitTokens {
			k = maxUnitTokens // never used as filler; only its run limit matters
		}
		c.count[i] = uint16(k)
	}
	if err := c.finish(); err != nil {
		return nil, err
	}
	return c, nil
}

// Corpus cache file layout (little-endian):
//
//	magic "APSYNC02" | u32 version | u32 units | u32 text bytes |
//	[32]byte key | text | u32 offsets[units+1] | u16 counts[units] |
//	u32 CRC32-Castagnoli of everything before it | magic "APSYNC02"
//
// The text is stored so that a warm open does not regenerate it; the key
// covers the seed, CorpusVersion and the tokenizer.
const cacheMagic = "APSYNC02"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errCacheCorrupt marks a corpus cache file that must be rebuilt.
var errCacheCorrupt = errors.New("synth: corpus cache corrupt")

const cacheHead = 8 + 4 + 4 + 4 + 32

func encodeCorpusCache(c *corpus, key [32]byte) []byte {
	n := c.units()
	b := make([]byte, 0, cacheHead+len(c.text)+4*(n+1)+2*n+4+8)
	b = append(b, cacheMagic...)
	b = binary.LittleEndian.AppendUint32(b, CorpusVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.text)))
	b = append(b, key[:]...)
	b = append(b, c.text...)
	for _, o := range c.off {
		b = binary.LittleEndian.AppendUint32(b, o)
	}
	for _, k := range c.count {
		b = binary.LittleEndian.AppendUint16(b, k)
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	return append(b, cacheMagic...)
}

// decodeCorpusCache validates data against key and returns the corpus
// text, unit offsets and counts (copies, not aliasing data).
func decodeCorpusCache(data []byte, key [32]byte) (text []byte, off []uint32, count []uint16, err error) {
	if len(data) < cacheHead+4+4+8 || string(data[:8]) != cacheMagic || string(data[len(data)-8:]) != cacheMagic {
		return nil, nil, nil, fmt.Errorf("%w: bad magic or truncated", errCacheCorrupt)
	}
	body := data[:len(data)-12]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[len(data)-12:]) {
		return nil, nil, nil, fmt.Errorf("%w: checksum mismatch", errCacheCorrupt)
	}
	if v := binary.LittleEndian.Uint32(data[8:]); v != CorpusVersion {
		return nil, nil, nil, fmt.Errorf("%w: version %d, want %d", errCacheCorrupt, v, CorpusVersion)
	}
	n := int(binary.LittleEndian.Uint32(data[12:]))
	tl := int(binary.LittleEndian.Uint32(data[16:]))
	if !bytes.Equal(key[:], data[20:52]) {
		return nil, nil, nil, fmt.Errorf("%w: key mismatch", errCacheCorrupt)
	}
	if n <= 0 || tl <= 0 || uint64(len(body)) != uint64(cacheHead)+uint64(tl)+4*uint64(n+1)+2*uint64(n) {
		return nil, nil, nil, fmt.Errorf("%w: size mismatch for %d units and %d text bytes", errCacheCorrupt, n, tl)
	}
	text = bytes.Clone(body[cacheHead : cacheHead+tl])
	p := body[cacheHead+tl:]
	off = make([]uint32, n+1)
	for i := range off {
		off[i] = binary.LittleEndian.Uint32(p[4*i:])
		if i > 0 && off[i] <= off[i-1] || int(off[i]) > tl {
			return nil, nil, nil, fmt.Errorf("%w: offset %d out of order", errCacheCorrupt, i)
		}
	}
	if off[0] != 0 || int(off[n]) != tl || text[tl-1] != '\n' {
		return nil, nil, nil, fmt.Errorf("%w: offsets do not cover the text", errCacheCorrupt)
	}
	p = p[4*(n+1):]
	count = make([]uint16, n)
	for i := range count {
		count[i] = binary.LittleEndian.Uint16(p[2*i:])
		if count[i] == 0 {
			return nil, nil, nil, fmt.Errorf("%w: unit %d has no tokens", errCacheCorrupt, i)
		}
	}
	return text, off, count, nil
}

// corpusKey identifies (tokenizer, seed, corpus version, size). The
// tokenizer is identified by its name and by the ids it gives a fixed probe
// text, so two different tokenizers behind the same name never share a
// cache file.
func corpusKey(tok tokenizer.Tokenizer, seed int64, size int) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "agentperf.synth.corpus v%d size=%d seed=%d tokenizer=%q\n", CorpusVersion, size, seed, tok.Name())
	probe := "func (s *Server) handle(ctx context.Context) error {\n\treturn fmt.Errorf(\"x: %w\", err)\n}\n" +
		"    def run(self):\n$ go test ./...\n--- FAIL: TestX (0.00s)\n{\"a\": [1, 22, 333, 4444]}\n}\n)\n;\n"
	var b [4]byte
	for _, id := range tok.Encode(probe) {
		binary.LittleEndian.PutUint32(b[:], id)
		h.Write(b[:])
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// loadOrBuildCorpus returns the corpus for tok and seed, from dir's cache
// file when it is valid, else built (and written there when dir != "").
func loadOrBuildCorpus(tok tokenizer.Tokenizer, seed int64, size int, dir string, logf func(string, ...any)) (*corpus, bool, error) {
	if dir == "" {
		c, err := buildCorpus(tok, seed, size, logf)
		return c, false, err
	}
	key := corpusKey(tok, seed, size)
	path := filepath.Join(dir, fmt.Sprintf("synth-corpus-v%d-%x.bin", CorpusVersion, key[:10]))
	if data, err := os.ReadFile(path); err == nil {
		text, off, count, derr := decodeCorpusCache(data, key)
		if derr == nil {
			c := &corpus{text: text, off: off, count: count}
			if ferr := c.finish(); ferr == nil {
				return c, true, nil
			}
		}
		logf("synth: corpus cache %s is invalid (%v); rebuilding it", path, derr)
	}
	c, err := buildCorpus(tok, seed, size, logf)
	if err != nil {
		return nil, false, err
	}
	if err := writeFileAtomic(path, encodeCorpusCache(c, key)); err != nil {
		logf("synth: cannot write corpus cache %s: %v (continuing without it)", path, err)
	}
	return c, false, nil
}

// writeFileAtomic writes b to path through a fsynced temp file and a rename,
// then fsyncs the directory.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, b)
}
