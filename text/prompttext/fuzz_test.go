package prompttext

import (
	"testing"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// traceFromBytes decodes fuzz input into a small trace: byte 0 sets the
// system blocks, then 4 bytes per request (in blocks, in remainder, hash-id
// shape, out).
func traceFromBytes(data []byte) *dataset.Trace {
	tr := &dataset.Trace{ID: "fuzz", BlockSize: 64}
	if len(data) == 0 {
		return tr
	}
	tr.ToolTokens = int(data[0]%4) * 50
	data = data[1:]
	var prev []uint32
	next := uint32(1)
	for len(data) >= 4 && len(tr.Requests) < 24 {
		blocks, rem, shape, out := int(data[0]%24), int(data[1]%64), data[2], int(data[3])*4
		data = data[4:]
		var ids []uint32
		keep := len(prev)
		switch shape % 4 {
		case 0: // extension
		case 1: // pull-back to a random prefix
			keep = int(shape/4) % (len(prev) + 1)
		case 2: // fresh
			keep = 0
		case 3: // identical
		}
		ids = append(ids, prev[:min(keep, len(prev), blocks)]...)
		for len(ids) < blocks {
			ids = append(ids, next)
			next++
		}
		if shape%4 == 3 {
			ids = append([]uint32(nil), prev...)
		}
		if shape&0x80 != 0 && len(ids) > 0 { // truncated or partial-block hash lists
			ids = ids[:len(ids)-1]
		} else if shape&0x40 != 0 {
			ids = append(ids, next)
			next++
		}
		in := blocks*64 + rem
		if in == 0 {
			in = 1
		}
		tr.Requests = append(tr.Requests, dataset.Request{In: in, Out: out, HashIDs: ids})
		prev = ids
	}
	if len(tr.Requests) > 0 && len(tr.Requests[0].HashIDs) < (tr.ToolTokens+63)/64 {
		tr.ToolTokens = 0
	}
	return tr
}

// FuzzConversation: for any trace shape, reconstruction never panics and
// every turn's contents are non-empty, end with a user message, sum to in
// and re-encode exactly.
func FuzzConversation(f *testing.F) {
	f.Add([]byte{1, 5, 10, 0, 30, 9, 0, 0, 20, 7, 1 | 3<<2, 100, 7, 0, 3, 0})
	f.Add([]byte{3, 4, 0, 0, 255, 8, 0, 0, 0, 5, 0, 1 | 6<<2, 0, 5, 0, 3, 0})
	f.Add([]byte{0, 2, 5, 0x80, 10, 4, 5, 0x40, 10, 4, 5, 2, 10})
	s, err := New(tokenizer.Builtin(), Options{corpusBytes: 200 << 10})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := traceFromBytes(data)
		c, err := s.Conversation(tr)
		if err != nil {
			t.Fatalf("trace %+v: %v", tr, err)
		}
		checkTurnInvariants(t, c, tr)
		// The planner must make the relabel safety net unnecessary except
		// where no user block can exist: a turn that only pulls back into
		// the system prompt, or a turn 0 that is all system prompt.
		p := (tr.ToolTokens + tr.SystemTokens + 63) / 64
		for k := 0; k < c.NumTurns(); k++ {
			i := c.Info(k)
			legit := k == 0 || (i.Kept <= p && i.NewBlocks == 0 && i.Tail == 0)
			if i.Relabeled && !legit {
				t.Errorf("turn %d needed the relabel safety net: %+v (trace %+v)", k, i, tr.Requests)
			}
		}
	})
}
