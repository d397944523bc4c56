package dataset

// Trace is one recorded agentic session (one line of traces.jsonl).
//
// Requests holds the parent (top-level) requests in file order. Subagent
// entries are kept apart in Subagents, each remembering how many parent
// requests preceded it (After), so the original interleaving can be
// recovered without mixing the two kinds in one slice.
//
// A Trace returned by a Corpus opened from the mmap cache may alias the
// mapped file (HashIDs in particular); it stays valid until the Corpus is
// closed.
type Trace struct {
	ID           string
	Models       []string
	BlockSize    int
	HashIDScope  string
	ToolTokens   int
	SystemTokens int
	Requests     []Request
	Subagents    []Subagent
}

// Request is one recorded LLM call (a `"n"` or `"s"` row).
type Request struct {
	// T is the start time in seconds relative to the session start.
	T float64
	// Type is "n" (non-streaming) or "s" (streaming) as recorded.
	Type  string
	Model string
	// In and Out are the recorded input and output token counts.
	In  int
	Out int
	// HashIDs are the ids of the 64-token KV blocks of the prompt prefix.
	HashIDs     []uint32
	InputTypes  []string
	OutputTypes []string
	Stop        string
	// APITime is the recorded server time in seconds (NaN when absent).
	APITime float64
	// ThinkTime is the recorded client gap in seconds before this request
	// (NaN when absent or null).
	ThinkTime float64
	// TTFT is the recorded time to first token in seconds (NaN when absent).
	TTFT float64
}

// Subagent is a `type: "subagent"` entry with its nested requests.
type Subagent struct {
	// After is the number of parent requests that precede this entry in the
	// trace's request list.
	After        int
	T            float64
	AgentID      string
	SubagentType string
	// DurationMs is NaN when null (e.g. status "async_launched").
	DurationMs   float64
	TotalTokens  int
	ToolUseCount int
	Status       string
	Models       []string
	ToolTokens   int
	SystemTokens int
	// Requests are the inner requests, with T on the root timeline (inner
	// times earlier than the entry's T are treated as relative and shifted).
	Requests []Request
	// Subagents nested inside this one, After counting this entry's Requests.
	Subagents []Subagent
}

// NumSubagentRequests returns the number of requests inside subagent entries
// of t, counted recursively.
func (t *Trace) NumSubagentRequests() int {
	n := 0
	var walk func([]Subagent)
	walk = func(ss []Subagent) {
		for i := range ss {
			n += len(ss[i].Requests)
			walk(ss[i].Subagents)
		}
	}
	walk(t.Subagents)
	return n
}

// PeakContext returns the largest In+Out over the parent requests, with Out
// capped at maxOSL when maxOSL > 0, and over all subagent requests (never
// capped). It is what --max-context-length compares against.
func (t *Trace) PeakContext(maxOSL int) int {
	peak := 0
	for _, r := range t.Requests {
		out := r.Out
		if maxOSL > 0 && out > maxOSL {
			out = maxOSL
		}
		peak = max(peak, r.In+out)
	}
	var walk func([]Subagent)
	walk = func(ss []Subagent) {
		for i := range ss {
			for _, r := range ss[i].Requests {
				peak = max(peak, r.In+r.Out)
			}
			walk(ss[i].Subagents)
		}
	}
	walk(t.Subagents)
	return peak
}
