package synth

import (
	"io"
	"sync"
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
// AppendMessagesJSONAt appends, to w. It returns the bytes written.
func (c *Conversation) WriteMessagesJSONAt(w io.Writer, k int, marker string, at MarkerPlacement) (int64, error) {
	bp := stagePool.Get().(*[]byte)
	defer stagePool.Put(bp)
	var n int64
	flush := func(b []byte) error {
		m, err := w.Write(b)
		n += int64(m)
		return err
	}
	b, err := c.appendMessages((*bp)[:0], k, marker, at, flush)
	*bp = b[:0]
	if err != nil {
		return n, err
	}
	err = flush(b)
	return n, err
}

// MessagesJSONLenAt returns the length of turn k's message list as
// AppendMessagesJSONAt renders it, without rendering it: the escaped text
// length of each segment is memoised, so after a segment's first turn it
// costs a few additions per message.
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
			size += escapedLen(marker) + len(`\n\n`)
		}
		if r, ok := c.liveSlot(n); ok {
			size += escapedLen(r)
			continue
		}
		size += c.nodeTextLen(ni)
	}
	return size, nil
}

// nodeTextLen returns the escaped length of node ni's blocks and tail,
// memoised (deriving the blocks' text as rendering does).
func (c *Conversation) nodeTextLen(ni int32) int {
	if int(ni) >= len(c.textLen) {
		c.textLen = append(c.textLen, make([]int32, len(c.nodes)-len(c.textLen))...)
	}
	if v := c.textLen[ni]; v > 0 {
		return int(v - 1)
	}
	n := &c.nodes[ni]
	size := 0
	ids := c.reqs[n.src].HashIDs
	for b := n.start; b < n.end(); b++ {
		size += c.s.c.escLen(c.block(ids[b]))
	}
	if n.tail > 0 {
		size += c.s.c.escLen(c.tail(n.tailTurn, n.tail))
	}
	c.textLen[ni] = int32(size + 1)
	return size
}

// escapedLen is len(appendJSONEscapedString(nil, s)).
func escapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\t' || c == '\r':
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}
