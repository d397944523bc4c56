package dataset

import (
	"fmt"
	"strings"

	"github.com/edsrzf/mmap-go"
)

// Corpus is a loaded, selected set of traces: either held in memory
// (NewCorpus, synthetic corpora, cache disabled) or served from a mapped
// cache file (OpenCache, Open with the cache enabled).
//
// A Corpus served from a cache materialises a Trace on each call to Trace:
// its strings and slices are fresh or shared read-only, and its HashIDs are
// views into the read-only mapping, not copies. Those views stay valid until
// Close; writing through them faults, and using them after Close is a bug
// (the memory is unmapped). If another process truncates the file while it
// is mapped, reading the views faults (SIGBUS): read them inside Guard,
// which turns that into an error. Slices of a returned Trace (Models, InputTypes,
// HashIDs, ...) may be shared with other traces and must be treated as
// read-only. Copy what must outlive the Corpus.
//
// Len, Trace, Traces, Identity and LoadStats are safe for concurrent use;
// Close must not run concurrently with them.
type Corpus struct {
	// In memory.
	traces []Trace

	// Decoded from a cache file (mapping is nil only in tests that decode
	// a byte slice).
	cached     bool
	mapping    mmap.MMap
	unregister func() // forgets the mapping for Guard
	strs       []string
	lists      [][]string
	tt, st, rt table
	hash       []uint32

	n         int
	meta      cacheMeta
	fromCache bool
	path      string
	closed    bool
}

// LoadStats is what reading and selecting the corpus saw. A corpus served
// from the cache reports the numbers recorded when it was built (skip
// reasons are kept as messages only).
type LoadStats struct {
	Read   ReadStats
	Select SelectStats
}

// NewCorpus returns an in-memory corpus over traces (not copied) with the
// given identity. Close is a no-op for it.
func NewCorpus(traces []Trace, id Identity) *Corpus {
	return newMemCorpus(traces, cacheMeta{Identity: id})
}

func newMemCorpus(traces []Trace, meta cacheMeta) *Corpus {
	return &Corpus{traces: traces, n: len(traces), meta: meta}
}

// Len returns the number of traces.
func (c *Corpus) Len() int { return c.n }

// Identity returns where the corpus came from and its counts.
func (c *Corpus) Identity() Identity { return c.meta.Identity }

// LoadStats returns the read and selection statistics of the corpus.
func (c *Corpus) LoadStats() LoadStats {
	return LoadStats{Read: c.meta.Read.stats(), Select: c.meta.Select}
}

// FromCache reports whether the corpus was served from an existing cache
// file without reading the source (a warm open).
func (c *Corpus) FromCache() bool { return c.fromCache }

// CachePath returns the cache file behind the corpus, or "" for an
// in-memory corpus.
func (c *Corpus) CachePath() string { return c.path }

// Close releases the mapping. Traces obtained from the corpus must not be
// used afterwards. Close is idempotent.
func (c *Corpus) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	c.strs, c.lists, c.hash = nil, nil, nil
	c.tt, c.st, c.rt = table{}, table{}, table{}
	if c.mapping != nil {
		m := c.mapping
		c.mapping = nil
		if c.unregister != nil {
			c.unregister()
		}
		if err := m.Unmap(); err != nil {
			return fmt.Errorf("close dataset cache %s: %w", c.path, err)
		}
	}
	return nil
}

// Find returns the trace whose ID is id; an error names a few of the
// corpus's ids when there is none.
func (c *Corpus) Find(id string) (Trace, error) {
	var some []string
	for i := 0; i < c.Len(); i++ {
		tr := c.Trace(i)
		if tr.ID == id {
			return tr, nil
		}
		if len(some) < 5 {
			some = append(some, tr.ID)
		}
	}
	return Trace{}, fmt.Errorf("no trace %q in the corpus (%d traces; e.g. %s)", id, c.Len(), strings.Join(some, ", "))
}

// Trace returns trace i (0 ≤ i < Len). It panics if i is out of range or
// the corpus is closed, like an index expression.
func (c *Corpus) Trace(i int) Trace {
	if c.closed {
		panic(errCorpusClosed)
	}
	if i < 0 || i >= c.n {
		panic(fmt.Sprintf("dataset: trace index %d out of range [0,%d)", i, c.n))
	}
	if !c.cached {
		return c.traces[i]
	}
	t := Trace{
		ID:           c.strs[c.tt.u32(tcID, i)],
		Models:       c.lists[c.tt.u32(tcModels, i)],
		BlockSize:    c.tt.int(tcBlockSize, i),
		HashIDScope:  c.strs[c.tt.u32(tcScope, i)],
		ToolTokens:   c.tt.int(tcToolTokens, i),
		SystemTokens: c.tt.int(tcSystemTokens, i),
	}
	t.Requests = c.requests(c.tt.u32(tcReqStart, i), c.tt.u32(tcReqCount, i))
	t.Subagents = c.subagents(c.tt.u32(tcSubStart, i), c.tt.u32(tcSubCount, i))
	return t
}

// ReadTraces is Traces run inside Guard: a fault on the mapped cache file
// (truncated while this reads it) is returned as a *FaultError (matching
// ErrCacheChanged) instead of crashing the process. The hash ids of the
// traces still view the mapping: read them inside Guard too.
func (c *Corpus) ReadTraces() ([]Trace, error) {
	var out []Trace
	err := Guard(func() error { out = c.Traces(); return nil })
	return out, err
}

// Traces returns every trace: for a cached corpus a fresh slice of
// materialised traces (hash ids still viewing the mapping), for an
// in-memory one the corpus's own slice. Treat it as read-only either way.
func (c *Corpus) Traces() []Trace {
	if !c.cached && !c.closed {
		return c.traces
	}
	out := make([]Trace, c.n)
	for i := range out {
		out[i] = c.Trace(i)
	}
	return out
}

func (c *Corpus) requests(start, n uint32) []Request {
	if n == 0 {
		return nil
	}
	rs := make([]Request, n)
	for k := range rs {
		row := int(start) + k
		r := &rs[k]
		r.T = c.rt.f64(rcT, row)
		r.APITime = c.rt.f64(rcAPITime, row)
		r.ThinkTime = c.rt.f64(rcThinkTime, row)
		r.TTFT = c.rt.f64(rcTTFT, row)
		r.In = c.rt.int(rcIn, row)
		r.Out = c.rt.int(rcOut, row)
		// Per-request references are bounds-checked here rather than at
		// open (see decodeCache); an out-of-range one reads as empty.
		if hn, off := uint64(c.rt.u32(rcHashLen, row)), c.rt.u64(rcHashOff, row); hn > 0 && off <= uint64(len(c.hash)) && hn <= uint64(len(c.hash))-off {
			r.HashIDs = c.hash[off : off+hn : off+hn]
		}
		r.Type = c.str(c.rt.u32(rcType, row))
		r.Model = c.str(c.rt.u32(rcModel, row))
		r.Stop = c.str(c.rt.u32(rcStop, row))
		r.InputTypes = c.list(c.rt.u32(rcInputTypes, row))
		r.OutputTypes = c.list(c.rt.u32(rcOutputTypes, row))
	}
	return rs
}

func (c *Corpus) str(i uint32) string {
	if uint64(i) < uint64(len(c.strs)) {
		return c.strs[i]
	}
	return ""
}

func (c *Corpus) list(i uint32) []string {
	if uint64(i) < uint64(len(c.lists)) {
		return c.lists[i]
	}
	return nil
}

func (c *Corpus) subagents(start, n uint32) []Subagent {
	if n == 0 {
		return nil
	}
	ss := make([]Subagent, n)
	for k := range ss {
		row := int(start) + k
		s := &ss[k]
		s.After = c.st.int(scAfter, row)
		s.T = c.st.f64(scT, row)
		s.AgentID = c.strs[c.st.u32(scAgentID, row)]
		s.SubagentType = c.strs[c.st.u32(scType, row)]
		s.DurationMs = c.st.f64(scDurationMs, row)
		s.TotalTokens = c.st.int(scTotalTokens, row)
		s.ToolUseCount = c.st.int(scToolUseCount, row)
		s.Status = c.strs[c.st.u32(scStatus, row)]
		s.Models = c.lists[c.st.u32(scModels, row)]
		s.ToolTokens = c.st.int(scToolTokens, row)
		s.SystemTokens = c.st.int(scSystemTokens, row)
		s.Requests = c.requests(c.st.u32(scReqStart, row), c.st.u32(scReqCount, row))
		s.Subagents = c.subagents(c.st.u32(scChildStart, row), c.st.u32(scChildCount, row))
	}
	return ss
}
