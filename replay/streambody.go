package replay

import (
	"fmt"
	"io"

	"github.com/agentperf/agentperf/text/prompttext"
)

// streamBodyAbove is the message-list size above which a request body is
// streamed: written as it is rendered from the shared corpus text
// (prompttext.WriteMessagesJSONAt) instead of being built in the slot's buffer.
// A slot then never holds more than about this much of a prompt: on the
// real corpus a per-slot buffer grew to the largest prompt a lane ever
// sent, about 1 MB, over 1 GB at 2,000 lanes. Smaller bodies (every
// prompt of the client-ceiling benchmark) keep the one-buffer path. A
// streamed list is rendered during the write, so the rendering (a copy of
// its bytes, about 0.1 ms for a 100k-token prompt) falls inside the
// request's timing, where writing the bytes to the socket already was.
const streamBodyAbove = 64 << 10

// streamBody is a request body whose message list is rendered while it is
// written: body holds the bytes before it (head) and after it (tail).
type streamBody struct {
	conv   *prompttext.Conversation
	turn   int
	marker string
	at     prompttext.MarkerPlacement
	head   int // body[:head] precedes the message list, body[head:] follows it
	body   []byte
	size   int
}

// buildBody prepares turn k's body in sl: whole in sl.body, or as a
// stream when its message list is larger than streamBodyAbove. A list is
// first rendered into the buffer, up to that size: a small one (every
// prompt of the client-ceiling benchmark) is then done, in one pass; only
// a larger one asks for its length (the Content-Length of the stream).
func (sl *slot) buildBody(c *runConfig, p bodyParams, conv *prompttext.Conversation, k int, marker string) error {
	at := c.CacheBust.Placement
	sl.stream = streamBody{}
	body := appendBodyHead(sl.body[:0], p)
	head := len(body)
	body, whole, err := conv.AppendMessagesJSONAtMost(body, k, marker, at, streamBodyAbove)
	if err != nil {
		sl.body = body[:head]
		return err
	}
	if whole {
		sl.body = appendBodyTail(body, c, p)
		return nil
	}
	n, err := conv.MessagesJSONLenAt(k, marker, at)
	sl.body = appendBodyTail(body[:head], c, p)
	if err != nil {
		return err
	}
	sl.stream = streamBody{conv: conv, turn: k, marker: marker, at: at, head: head, body: sl.body, size: len(sl.body) + n}
	return nil
}

// bodyLen is the length of the body buildBody prepared.
func (sl *slot) bodyLen() int {
	if sl.stream.conv != nil {
		return sl.stream.size
	}
	return len(sl.body)
}

// streamBody returns the body to stream, or nil when sl.body is the body.
func (sl *slot) streamBody() *streamBody {
	if sl.stream.conv == nil {
		return nil
	}
	return &sl.stream
}

// Len is the body's length (its Content-Length).
func (b *streamBody) Len() int { return b.size }

// WriteTo writes the body to w: the head, the message list as it is
// rendered, the tail.
func (b *streamBody) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(b.body[:b.head])
	total := int64(n)
	if err != nil {
		return total, err
	}
	m, err := b.conv.WriteMessagesJSONAt(w, b.turn, b.marker, b.at)
	total += m
	if err != nil {
		return total, err
	}
	n, err = w.Write(b.body[b.head:])
	total += int64(n)
	if err == nil && total != int64(b.size) {
		err = fmt.Errorf("request body: wrote %d bytes, announced %d", total, b.size)
	}
	return total, err
}
