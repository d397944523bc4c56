package prompttext

import (
	"io"
	"sync"

	"github.com/agentperf/agentperf/internal/jsonx"
)

// Streaming a turn's message list. AppendMessagesJSONAt copies the whole
// list into the caller's buffer; a client that keeps one buffer per
// connection then holds the largest prompt it ever sent per connection
// (about 1 MB per lane on the real corpus: 2,000 lanes held over 1 GB of
// buffers). WriteMessagesJSONAt renders the same bytes straight from the
// shared, pre-escaped corpus text into a writer, through a pooled staging
// buffer of flushAt bytes, and MessagesJSONLenAt gives their length first
// (for a Content-Length) without rendering them.

// flushAt is the size of the staging buffer of WriteMessagesJSONAt.
const flushAt = 32 << 10

var stagePool = sync.Pool{New: func() any { b := make([]byte, 0, flushAt+4<<10); return &b }}

// WriteMessagesJSONAt writes turn k's message list, the bytes
// AppendMessagesJSONAt appends, to w. It returns the bytes written. Block
// text comes from the spans memoised per segment (MessagesJSONLenAt
// memoises them; a segment not seen yet is derived here).
func (c *Conversation) WriteMessagesJSONAt(w io.Writer, k int, marker string, at MarkerPlacement) (int64, error) {
	bp := stagePool.Get().(*[]byte)
	defer stagePool.Put(bp)
	b, n, err := c.appendMessages((*bp)[:0], k, marker, at, w, 0)
	*bp = b[:0]
	if err != nil {
		return n, err
	}
	m, err := w.Write(b)
	return n + int64(m), err
}

// MessagesJSONLenAt returns the length of turn k's message list as
// AppendMessagesJSONAt renders it, without rendering it: the escaped text
// length of each segment is memoised, so after a segment's first turn it
// costs a few additions per message. It reads every hash id the list
// needs, so a WriteMessagesJSONAt of the same turn that follows reads none
// (a fault on a mapped trace cache can then only happen here, before
// anything was sent).
func (c *Conversation) MessagesJSONLenAt(k int, marker string, at MarkerPlacement) (int, error) {
	chain, target, err := c.messageChain(k, marker, at)
	if err != nil {
		return 0, err
	}
	size := 2 // [ ]
	first := true
	for i, ni := range chain {
		n := &c.nodes[ni]
		if c.skipped(n) {
			continue
		}
		if !first {
			size++
		}
		first = false
		size += len(`{"role":"`) + len(roleNames[n.role]) + len(`","content":"`) + len(`"}`)
		if i == target {
			size += jsonx.StringBodyLen(marker) + len(`\n\n`)
		}
		if r, ok := c.liveSlot(n); ok {
			size += jsonx.StringBodyLen(r)
			continue
		}
		size += c.nodeTextLen(ni)
	}
	return size, nil
}

// nodeText is what is memoised of a node: its escaped text length and its
// spans, nodeRefs[off:off+n] (refs into the conversation's arena).
type nodeText struct {
	known  bool
	len    int32
	off, n uint32
}

// nodeTextLen returns the escaped length of node ni's blocks and tail.
func (c *Conversation) nodeTextLen(ni int32) int {
	return int(c.memoNode(ni).len)
}

// nodeSpans returns node ni's spans (blocks, then tail) as arena refs.
func (c *Conversation) nodeSpans(ni int32) []ref {
	t := c.memoNode(ni)
	return c.nodeRefs[t.off : t.off+t.n]
}

// memoNode derives and memoises node ni's text (its blocks' spans, as
// rendering does) the first time it is asked for.
func (c *Conversation) memoNode(ni int32) nodeText {
	if int(ni) >= len(c.nodeText) {
		c.nodeText = append(c.nodeText, make([]nodeText, len(c.nodes)-len(c.nodeText))...)
	}
	if t := c.nodeText[ni]; t.known {
		return t
	}
	n := &c.nodes[ni]
	t := nodeText{known: true, off: uint32(len(c.nodeRefs))}
	add := func(id uint32, tail bool) {
		var r ref
		if tail {
			c.tail(n.tailTurn, n.tail)
			r = c.tails[n.tailTurn]
		} else {
			c.block(id)
			r = c.blocks[id]
		}
		c.nodeRefs = append(c.nodeRefs, r)
		t.len += int32(c.s.c.escLen(c.arena[r.off : r.off+r.n]))
	}
	ids := c.reqs[n.src].HashIDs
	for b := n.start; b < n.end(); b++ {
		add(ids[b], false)
	}
	if n.tail > 0 {
		add(0, true)
	}
	t.n = uint32(len(c.nodeRefs)) - t.off
	c.nodeText[ni] = t
	return t
}
