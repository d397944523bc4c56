package prompttext

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
)

// blockTokens is the number of tokens of one hash block (the weka
// block_size). Traces with another block size are rejected.
const blockTokens = 64

// span is a run of consecutive corpus units [u0, u1).
type span struct{ u0, u1 uint32 }

// splitmix is a tiny deterministic generator seeded from a SHA-256 digest.
type splitmix struct{ s uint64 }

func (r *splitmix) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// intn returns a value in [0, n) (n > 0); the modulo bias is irrelevant
// here.
func (r *splitmix) intn(n int) int { return int(r.next() % uint64(n)) }

// seedFrom returns a generator seeded with the first 16 bytes of
// SHA-256(key), read big-endian as aiperf reads its seed digests.
func seedFrom(key []byte) splitmix {
	d := sha256.Sum256(key)
	return splitmix{binary.BigEndian.Uint64(d[:8]) ^ binary.BigEndian.Uint64(d[8:16])*0x2545f4914f6cdd1d}
}

// blockKey appends "<base_seed>:<scope>:<hash_id>", aiperf's block key
// (docs/prompt-synthesis.md).
func blockKey(dst []byte, baseSeed uint64, scope string, id uint32) []byte {
	dst = strconv.AppendUint(dst, baseSeed, 10)
	dst = append(dst, ':')
	dst = append(dst, scope...)
	dst = append(dst, ':')
	return strconv.AppendUint(dst, uint64(id), 10)
}

// tailKey appends "<conversation id>:turn_<k>:partial_tail", aiperf's
// tail key (it does not include the seed, but the corpus does).
func tailKey(dst []byte, conv string, turn int) []byte {
	dst = append(dst, conv...)
	dst = append(dst, ":turn_"...)
	dst = strconv.AppendInt(dst, int64(turn), 10)
	return append(dst, ":partial_tail"...)
}

// takeRun appends the longest run of consecutive units starting at start
// whose tokens fit in limit, and returns the tokens taken.
func (c *corpus) takeRun(dst []span, start, limit int) ([]span, int) {
	n := c.units()
	sum, i := 0, start
	for i < n && sum+int(c.count[i]) <= limit {
		sum += int(c.count[i])
		i++
	}
	if i > start {
		dst = append(dst, span{uint32(start), uint32(i)})
	}
	return dst, sum
}

// fill appends spans holding exactly n tokens, drawn with rng. A piece of
// at most 64 tokens is a run of consecutive corpus lines from a random
// place (about half to three quarters of the piece; up to four places are
// tried until one fits), then up to six more
// runs from other random places while they fit, then whole lines of
// exactly the missing size (random sizes while more than 16 tokens are
// missing); longer n are cut into 64-token pieces. Every span boundary is a
// cut point, so the pieces' texts concatenate to text of exactly n tokens.
func (c *corpus) fill(dst []span, n int, rng *splitmix) []span {
	for n > 0 {
		piece := min(n, blockTokens)
		n -= piece
		rem := piece
		var got int
		if rem >= 8 {
			limit := rem/2 + rng.intn(rem/4+1)
			for try := 0; got == 0 && try < 4; try++ {
				dst, got = c.takeRun(dst, rng.intn(c.units()), limit)
			}
			rem -= got
		}
		for try := 0; rem > 0 && try < 6; try++ {
			dst, got = c.takeRun(dst, rng.intn(c.units()), rem)
			rem -= got
		}
		for rem > 0 {
			k := int(c.below[rem]) // >= 1: bucket[1] is never empty
			if rem > 16 {
				k = int(c.below[1+rng.intn(rem)])
			}
			b := c.bucket[k]
			u := b[rng.intn(len(b))]
			dst = append(dst, span{u, u + 1})
			rem -= k
		}
	}
	return dst
}

func (c *corpus) appendText(dst []byte, spans []span) []byte {
	for _, s := range spans {
		dst = append(dst, c.text[c.off[s.u0]:c.off[s.u1]]...)
	}
	return dst
}

func (c *corpus) appendEscaped(dst []byte, spans []span) []byte {
	for _, s := range spans {
		dst = append(dst, c.esc[c.escOff[s.u0]:c.escOff[s.u1]]...)
	}
	return dst
}

func (c *corpus) textLen(spans []span) int {
	n := 0
	for _, s := range spans {
		n += int(c.off[s.u1] - c.off[s.u0])
	}
	return n
}

// escLen is the length of spans once JSON-escaped.
func (c *corpus) escLen(spans []span) int {
	n := 0
	for _, s := range spans {
		n += int(c.escOff[s.u1] - c.escOff[s.u0])
	}
	return n
}
