package tokenizer

import (
	"container/heap"
	"math"
	"strings"
	"sync"
)

// noRank marks a pair of adjacent symbols that no merge joins.
const noRank = math.MaxUint32

// merge is what a pair of adjacent symbols becomes: the merged token and the
// merge's priority (lower merges first).
type merge struct{ rank, id uint32 }

// bpeModel is a byte-level BPE model over raw bytes: the byte-to-unicode
// mapping of byte-level tokenizers is undone at load time, so text is never
// converted. It is shared by HF tokenizer.json models and tiktoken rank files.
type bpeModel struct {
	byteID [256]uint32
	byteOK [256]bool
	merges map[uint64]merge
	// vocab maps the raw bytes of every token to its id.
	vocab map[string]uint32
	// ignoreMerges emits a word found whole in vocab without merging (the
	// HF ignore_merges flag).
	ignoreMerges bool
	// missing marks bytes without a token; with an unk token they map to
	// byteID = the unk id, fused when fuseUnk (HF unk_token, fuse_unk).
	missing [256]bool
	fuseUnk bool
	cache   wordCache
}

// fused reports whether byte c is a missing byte that fuses into the
// previous symbol prev (an unk from a missing byte too).
func (m *bpeModel) fused(prevMissing bool, c byte) bool {
	return m.fuseUnk && prevMissing && m.missing[c]
}

func pairKey(a, b uint32) uint64 { return uint64(a)<<32 | uint64(b) }

func (m *bpeModel) rank(a, b uint32) merge {
	if mg, ok := m.merges[pairKey(a, b)]; ok {
		return mg
	}
	return merge{rank: noRank}
}

// encodeWord appends the ids of one pretoken (raw bytes) to dst.
func (m *bpeModel) encodeWord(dst []uint32, w string) []uint32 {
	if len(w) == 0 {
		return dst
	}
	if len(w) == 1 {
		if m.byteOK[w[0]] {
			dst = append(dst, m.byteID[w[0]])
		}
		return dst
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[w]; ok {
			return append(dst, id)
		}
	}
	cacheable := len(w) <= maxCachedWord
	if cacheable {
		if ids, ok := m.cache.get(w); ok {
			return append(dst, ids...)
		}
	}
	start := len(dst)
	if len(w) <= 128 {
		dst = m.mergeSmall(dst, w)
	} else {
		dst = m.mergeLarge(dst, w)
	}
	if cacheable {
		m.cache.put(w, dst[start:])
	}
	return dst
}

// mergeSmall merges a short word in place in dst: repeatedly the adjacent
// pair with the lowest rank (leftmost on ties) becomes its merged token.
func (m *bpeModel) mergeSmall(dst []uint32, w string) []uint32 {
	start := len(dst)
	prevMissing := false
	for i := 0; i < len(w); i++ {
		if m.byteOK[w[i]] && !m.fused(prevMissing, w[i]) {
			dst = append(dst, m.byteID[w[i]])
		}
		prevMissing = m.missing[w[i]]
	}
	syms := dst[start:]
	var rankBuf [128]merge
	ranks := rankBuf[:0]
	for i := 0; i+1 < len(syms); i++ {
		ranks = append(ranks, m.rank(syms[i], syms[i+1]))
	}
	for len(syms) > 1 {
		best := -1
		bestRank := uint32(noRank)
		for i, r := range ranks {
			if r.rank < bestRank {
				best, bestRank = i, r.rank
			}
		}
		if best < 0 {
			break
		}
		syms[best] = ranks[best].id
		copy(syms[best+1:], syms[best+2:])
		syms = syms[:len(syms)-1]
		copy(ranks[best:], ranks[best+1:])
		ranks = ranks[:len(ranks)-1]
		if best > 0 {
			ranks[best-1] = m.rank(syms[best-1], syms[best])
		}
		if best < len(ranks) {
			ranks[best] = m.rank(syms[best], syms[best+1])
		}
	}
	return dst[:start+len(syms)]
}

// mergeLarge is mergeSmall for long words: a linked list of symbols and a
// priority queue of candidate merges ordered by (rank, position), O(n log n).
func (m *bpeModel) mergeLarge(dst []uint32, w string) []uint32 {
	type node struct {
		id         uint32
		prev, next int32
		dead       bool
	}
	nodes := make([]node, 0, len(w))
	prevMissing := false
	for i := 0; i < len(w); i++ {
		if m.byteOK[w[i]] && !m.fused(prevMissing, w[i]) {
			nodes = append(nodes, node{id: m.byteID[w[i]], prev: int32(len(nodes)) - 1, next: int32(len(nodes)) + 1})
		}
		prevMissing = m.missing[w[i]]
	}
	if len(nodes) == 0 {
		return dst
	}
	nodes[len(nodes)-1].next = -1
	q := &mergeQueue{}
	push := func(i int32) {
		j := nodes[i].next
		if j < 0 {
			return
		}
		if mg := m.rank(nodes[i].id, nodes[j].id); mg.rank != noRank {
			heap.Push(q, mergeCand{rank: mg.rank, pos: i, left: nodes[i].id, right: nodes[j].id, id: mg.id})
		}
	}
	for i := range nodes {
		push(int32(i))
	}
	for q.Len() > 0 {
		c := heap.Pop(q).(mergeCand)
		l := &nodes[c.pos]
		if l.dead || l.id != c.left || l.next < 0 {
			continue
		}
		r := &nodes[l.next]
		if r.id != c.right {
			continue
		}
		l.id = c.id
		r.dead = true
		l.next = r.next
		if r.next >= 0 {
			nodes[r.next].prev = c.pos
		}
		if l.prev >= 0 {
			push(l.prev)
		}
		push(c.pos)
	}
	for i := int32(0); i >= 0; i = nodes[i].next {
		dst = append(dst, nodes[i].id)
	}
	return dst
}

type mergeCand struct {
	rank, left, right, id uint32
	pos                   int32
}

type mergeQueue []mergeCand

func (q mergeQueue) Len() int { return len(q) }
func (q mergeQueue) Less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].pos < q[j].pos
}
func (q mergeQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *mergeQueue) Push(x any)   { *q = append(*q, x.(mergeCand)) }
func (q *mergeQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// maxCachedWord and maxCacheEntries bound the pretoken cache.
const (
	maxCachedWord   = 64
	maxCacheEntries = 1 << 16
)

// wordCache memoizes pretoken → ids. It is bounded: when full it is emptied
// and refilled, which keeps memory flat on any input.
type wordCache struct {
	mu sync.RWMutex
	m  map[string][]uint32
}

func (c *wordCache) get(w string) ([]uint32, bool) {
	c.mu.RLock()
	ids, ok := c.m[w]
	c.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []uint32) {
	v := make([]uint32, len(ids))
	copy(v, ids)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCacheEntries {
		c.m = make(map[string][]uint32, 1024)
	}
	c.m[strings.Clone(w)] = v
	c.mu.Unlock()
}
