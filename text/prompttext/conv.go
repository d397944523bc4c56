package prompttext

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/internal/jsonx"
)

// Roles of messages.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

type role uint8

const (
	roleSystem role = iota
	roleUser
	roleAssistant
)

var roleNames = [...]string{RoleSystem, RoleUser, RoleAssistant}

// Message is one chat message of a turn.
type Message struct {
	// Role is "system", "user" or "assistant".
	Role string
	// Content is the message text. In live mode an assistant slot holds the
	// reply set with SetLiveReply; a slot without one is not in the list.
	Content string
	// LiveReplyTo is, in live mode, the turn whose server reply fills this
	// assistant slot; -1 otherwise.
	LiveReplyTo int
	// Tokens is the number of tokens of the synthesized content under the
	// synthesis tokenizer (exact by construction). It counts the pre-canned
	// text even when a live reply replaced it.
	Tokens int
	// ToolResult marks a user message whose recorded input types include
	// "tool_result" (step 4 of docs/prompt-synthesis.md; informational,
	// for tool-shaped messages).
	ToolResult bool
}

// segment is one node of the persistent segment lists: a turn's message
// list is the chain from its last node through parent links. Nodes are
// never modified once created, so every turn's list stays available.
type segment struct {
	parent   int32
	role     role
	start    int32 // first block index
	count    int32 // full blocks
	src      int32 // turn whose HashIDs supply the blocks
	tail     int32 // synthesized tail tokens after the blocks (trailing segment only)
	tailTurn int32 // turn whose position keys the tail
	reply    int32 // assistant: the turn whose response this is; else -1
	tool     bool  // user: the creating request's input types include tool_result
}

func (s *segment) end() int32 { return s.start + s.count }

// TurnInfo describes how a turn was reconstructed.
type TurnInfo struct {
	// In and Out are the recorded token counts.
	In, Out int
	// LCP is the hash-id common prefix with the previous turn; Kept is the
	// number of blocks kept from the previous turn's list (LCP clamped to
	// the blocks that exist).
	LCP, Kept int
	// NewBlocks and Tail are the appended full blocks and synthesized tail
	// tokens; AssistantBlocks of the new blocks went to the assistant.
	NewBlocks, Tail, AssistantBlocks int
	// Cap is the planner's cap on AssistantBlocks (-1: none).
	Cap int
	// Reset reports what aiperf would store as reset_context: a previously
	// sent message was changed or removed, or nothing changed at all (the
	// equal-context retry).
	Reset bool
	// Relabeled reports that the turn would have ended with a non-user
	// message and its last block was handed to a user message.
	Relabeled bool
	// Messages is the number of messages of the turn.
	Messages int
}

// ref locates memoised spans in Conversation.arena.
type ref struct{ off, n uint32 }

// Conversation reconstructs the message lists of one conversation (a
// trace's parent requests, or one subagent's requests). It is cheap to
// create, memoises block spans, and must not be used by several goroutines
// at once; create one per session.
type Conversation struct {
	s      *Synthesizer
	scope  string // hash-id scope: the parent trace id
	conv   string // conversation id for tail keys
	reqs   []dataset.Request
	nodes  []segment
	last   []int32 // per turn: last node, -1 if the list is empty
	info   []TurnInfo
	blocks map[uint32]ref
	tails  map[int32]ref
	arena  []span
	chain  []int32
	// nodeText memoises, per node, its escaped text length and its
	// blocks' (and tail's) spans as refs into arena, kept in nodeRefs
	// (stream.go). Nodes never change once made.
	nodeText []nodeText
	nodeRefs []ref
	key      []byte
	live     map[int]string
}

// Conversation reconstructs the parent requests of tr. It runs the pass-1
// planner and the segment geometry for every turn (integer work only; the
// text is built on demand).
func (s *Synthesizer) Conversation(tr *dataset.Trace) (*Conversation, error) {
	if err := s.checkBlockSize(tr); err != nil {
		return nil, err
	}
	return s.newConversation(tr.ID, tr.ID, tr.Requests, tr.ToolTokens, tr.SystemTokens)
}

// SubagentConversation reconstructs the requests of subagent entry sa of tr.
// Its hash ids share tr's scope (as in aiperf's v1.0 loader), so a block id
// used by both decodes to the same text; its tails are keyed by the child
// conversation id "<trace id>::sa:<agent id>".
func (s *Synthesizer) SubagentConversation(tr *dataset.Trace, sa *dataset.Subagent) (*Conversation, error) {
	if err := s.checkBlockSize(tr); err != nil {
		return nil, err
	}
	return s.newConversation(tr.ID, tr.ID+"::sa:"+sa.AgentID, sa.Requests, sa.ToolTokens, sa.SystemTokens)
}

// StreamConversation reconstructs a child stream of tr: reqs (a subagent
// entry's inner requests, or one sibling stream's subset of them) with the
// entry's tool and system sizes. convID keys its partial tails; scope is
// its hash-id scope: tr.ID to share the parent's (a block id used by both
// decodes to the same text), or its own conversation id to keep it apart.
func (s *Synthesizer) StreamConversation(tr *dataset.Trace, scope, convID string, reqs []dataset.Request, toolTokens, systemTokens int) (*Conversation, error) {
	if err := s.checkBlockSize(tr); err != nil {
		return nil, err
	}
	return s.newConversation(scope, convID, reqs, toolTokens, systemTokens)
}

func (s *Synthesizer) checkBlockSize(tr *dataset.Trace) error {
	if tr.BlockSize != 0 && tr.BlockSize != s.opt.BlockSize {
		return fmt.Errorf("synth: trace %s has block_size %d; only %d is supported", tr.ID, tr.BlockSize, s.opt.BlockSize)
	}
	return nil
}

func (s *Synthesizer) newConversation(scope, conv string, reqs []dataset.Request, toolTokens, systemTokens int) (*Conversation, error) {
	c := &Conversation{
		s: s, scope: scope, conv: conv, reqs: reqs,
		last:   make([]int32, len(reqs)),
		info:   make([]TurnInfo, len(reqs)),
		blocks: make(map[uint32]ref),
		tails:  make(map[int32]ref),
	}
	caps := planCaps(reqs)
	if err := c.reconstruct(toolTokens, systemTokens, caps); err != nil {
		return nil, err
	}
	return c, nil
}

// NumTurns returns the number of requests (turns) of the conversation.
func (c *Conversation) NumTurns() int { return len(c.reqs) }

// Info returns how turn k was reconstructed.
func (c *Conversation) Info(k int) TurnInfo { return c.info[k] }

const bs = blockTokens

func commonPrefix(a, b []uint32) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// geometry returns, for turn k >= 1 given the number of full blocks that
// exist after turn k-1, the lcp, the kept blocks, the new full blocks and the
// synthesized tail tokens (docs/prompt-synthesis.md, turn k ≥ 1, step 1; kept
// is lcp clamped to the blocks that exist and to the blocks turn k covers, so
// the invariant "segments sum to in" holds for any hash-id list).
func geometry(p, cur *dataset.Request, total int) (lcp, kept, newBlocks, tail int) {
	lcp = commonPrefix(p.HashIDs, cur.HashIDs)
	covered := min(len(cur.HashIDs), cur.In/bs)
	kept = min(lcp, total, covered)
	newBlocks = covered - kept
	tail = cur.In%bs + max(0, cur.In/bs-len(cur.HashIDs))*bs
	return
}

// planCaps is the pass-1 planner (compute_asst_block_caps): for every
// degenerate pull-back (a turn that appends no block and no tail), it caps
// the assistant blocks of the turn that created the block the truncation
// exposes last, so that block is in that turn's user segment and every turn
// ends with a user message. caps[k] < 0 means no cap.
func planCaps(reqs []dataset.Request) []int {
	caps := make([]int, len(reqs))
	for i := range caps {
		caps[i] = -1
	}
	if len(reqs) == 0 {
		return caps
	}
	type region struct{ turn, start, end int }
	covered := min(len(reqs[0].HashIDs), max(reqs[0].In, 0)/bs)
	regions := []region{{0, 0, covered}}
	total := covered
	for k := 1; k < len(reqs); k++ {
		_, kept, newBlocks, tail := geometry(&reqs[k-1], &reqs[k], total)
		for len(regions) > 0 && regions[len(regions)-1].start >= kept {
			regions = regions[:len(regions)-1]
		}
		if n := len(regions); n > 0 && regions[n-1].end > kept {
			regions[n-1].end = kept
		}
		total = kept
		if newBlocks == 0 && tail == 0 && kept > 0 && len(regions) > 0 {
			r := regions[len(regions)-1]
			if r.turn > 0 {
				cp := kept - 1 - r.start
				if caps[r.turn] < 0 || cp < caps[r.turn] {
					caps[r.turn] = cp
				}
			}
		}
		if newBlocks > 0 {
			regions = append(regions, region{k, kept, kept + newBlocks})
			total += newBlocks
		}
	}
	return caps
}

func (c *Conversation) push(s segment) int32 {
	c.nodes = append(c.nodes, s)
	return int32(len(c.nodes) - 1)
}

// reconstruct runs the reconstruction of the aiperf fork InferenceX pins
// (its ConversationReconstructor; the rules are in docs/prompt-synthesis.md)
// over all turns, recording each turn's list as a chain of nodes.
func (c *Conversation) reconstruct(toolTokens, systemTokens int, caps []int) error {
	var state []int32 // node indices of the current list
	parent := func() int32 {
		if len(state) == 0 {
			return -1
		}
		return state[len(state)-1]
	}
	add := func(s segment) {
		s.parent = parent()
		state = append(state, c.push(s))
	}
	for k := range c.reqs {
		cur := &c.reqs[k]
		if cur.In < 0 {
			return fmt.Errorf("synth: %s request %d has negative in=%d", c.conv, k, cur.In)
		}
		info := TurnInfo{In: cur.In, Out: cur.Out, Cap: caps[k]}
		if k == 0 {
			covered := min(len(cur.HashIDs), cur.In/bs)
			tail := (cur.In/bs-covered)*bs + cur.In%bs
			p := 0
			if toolTokens+systemTokens > 0 {
				p = (toolTokens + systemTokens + bs - 1) / bs
				if p > len(cur.HashIDs) {
					return fmt.Errorf("synth: %s: tool_tokens+system_tokens=%d need %d system blocks but the first request has only %d hash ids; the system prefix would be fake (fix or drop the trace)",
						c.conv, toolTokens+systemTokens, p, len(cur.HashIDs))
				}
				p = min(p, covered)
				if p > 0 {
					add(segment{role: roleSystem, start: 0, count: int32(p), src: 0, tailTurn: -1, reply: -1})
				}
			}
			if covered-p > 0 || tail > 0 {
				add(segment{role: roleUser, start: int32(p), count: int32(covered - p), src: 0, tail: int32(tail), tailTurn: 0, reply: -1})
			}
			info.NewBlocks, info.Tail = covered, tail
		} else {
			p := &c.reqs[k-1]
			total := 0
			if len(state) > 0 {
				total = int(c.nodes[state[len(state)-1]].end())
			}
			lcp, kept, newBlocks, tail := geometry(p, cur, total)
			info.LCP, info.Kept, info.NewBlocks, info.Tail = lcp, kept, newBlocks, tail
			emitted := len(state)
			disturbed := c.truncate(&state, int32(kept))

			userSurvived := false
			for _, n := range state {
				if c.nodes[n].role == roleUser {
					userSurvived = true
					break
				}
			}
			asst := 0
			if p.Out > 0 && userSurvived { // context-loss rule
				asst = (p.Out + bs - 1) / bs
			}
			asst = min(asst, newBlocks)
			if caps[k] >= 0 {
				asst = min(asst, caps[k])
			}
			if tail == 0 && asst == newBlocks && asst > 0 { // trailing-user rule
				asst--
			}
			if asst > 0 {
				add(segment{role: roleAssistant, start: int32(kept), count: int32(asst), src: int32(k), tailTurn: -1, reply: int32(k - 1)})
			}
			if newBlocks-asst > 0 || tail > 0 {
				add(segment{role: roleUser, start: int32(kept + asst), count: int32(newBlocks - asst), src: int32(k), tail: int32(tail), tailTurn: int32(k), reply: -1,
					tool: slices.Contains(cur.InputTypes, "tool_result")})
			}
			info.AssistantBlocks = asst
			appended := newBlocks > 0 || tail > 0
			info.Reset = disturbed < emitted || (!appended && disturbed >= emitted)
		}
		// Safety net: a chat request must end with a user message.
		if n := len(state); n > 0 && c.nodes[state[n-1]].role != roleUser {
			last := c.nodes[state[n-1]]
			state = state[:n-1]
			if last.count >= 2 {
				shrunk := last
				shrunk.count--
				add(shrunk)
			}
			add(segment{role: roleUser, start: last.end() - 1, count: 1, src: last.src, tailTurn: -1, reply: -1})
			info.Relabeled = true
		}
		info.Messages = len(state)
		c.last[k] = parent()
		c.info[k] = info
	}
	return nil
}

// truncate cuts the list to exactly kept blocks (step 2 of
// docs/prompt-synthesis.md)
// and returns the earliest disturbed index (len(*state) when none).
func (c *Conversation) truncate(state *[]int32, kept int32) int {
	st := *state
	if kept == 0 {
		*state = st[:0]
		return 0
	}
	i := 0
	for c.nodes[st[i]].end() < kept {
		i++
	}
	n := c.nodes[st[i]]
	disturbed := len(st)
	switch {
	case n.end() == kept && n.tail > 0: // boundary cut with overhang
		n.tail, n.tailTurn = 0, -1
		st[i] = c.push(n)
		disturbed = i
	case n.end() == kept: // boundary cut
		if i < len(st)-1 {
			disturbed = i + 1
		}
	default: // mid-segment cut
		n.count = kept - n.start
		n.tail, n.tailTurn = 0, -1
		st[i] = c.push(n)
		disturbed = i
	}
	*state = st[:i+1]
	return disturbed
}

// segments fills c.chain with turn k's node indices in order.
func (c *Conversation) segments(k int) ([]int32, error) {
	if k < 0 || k >= len(c.reqs) {
		return nil, fmt.Errorf("synth: %s has %d turns; turn %d is out of range", c.conv, len(c.reqs), k)
	}
	c.chain = c.chain[:0]
	for n := c.last[k]; n >= 0; n = c.nodes[n].parent {
		c.chain = append(c.chain, n)
	}
	if len(c.chain) == 0 {
		return nil, fmt.Errorf("synth: %s turn %d has no input tokens (in=%d); it cannot be sent", c.conv, k, c.reqs[k].In)
	}
	slices.Reverse(c.chain)
	return c.chain, nil
}

// block returns the memoised spans of hash id in the conversation's scope.
func (c *Conversation) block(id uint32) []span {
	r, ok := c.blocks[id]
	if !ok {
		c.key = blockKey(c.key[:0], c.s.baseSeed, c.scope, id)
		rng := seedFrom(c.key)
		off := len(c.arena)
		c.arena = c.s.c.fill(c.arena, bs, &rng)
		r = ref{uint32(off), uint32(len(c.arena) - off)}
		c.blocks[id] = r
	}
	return c.arena[r.off : r.off+r.n]
}

// tail returns the memoised spans of turn's tail of n tokens.
func (c *Conversation) tail(turn, n int32) []span {
	r, ok := c.tails[turn]
	if !ok {
		c.key = tailKey(c.key[:0], c.conv, int(turn))
		rng := seedFrom(c.key)
		off := len(c.arena)
		c.arena = c.s.c.fill(c.arena, int(n), &rng)
		r = ref{uint32(off), uint32(len(c.arena) - off)}
		c.tails[turn] = r
	}
	return c.arena[r.off : r.off+r.n]
}

// forSpans calls f with the spans of node n in order.
func (c *Conversation) forSpans(n *segment, f func([]span)) {
	ids := c.reqs[n.src].HashIDs
	for b := n.start; b < n.end(); b++ {
		f(c.block(ids[b]))
	}
	if n.tail > 0 {
		f(c.tail(n.tailTurn, n.tail))
	}
}

func (n *segment) tokens() int { return int(n.count)*bs + int(n.tail) }

// liveSlot reports whether node n is a live-reply slot, and its reply.
func (c *Conversation) liveSlot(n *segment) (string, bool) {
	if !c.s.opt.Live || n.role != roleAssistant {
		return "", false
	}
	r, ok := c.live[int(n.reply)]
	return r, ok && r != ""
}

// skipped reports whether node n is left out of a message list: a live
// slot whose reply is unknown or empty (live mode never sends pre-canned
// assistant text).
func (c *Conversation) skipped(n *segment) bool {
	if !c.s.opt.Live || n.role != roleAssistant {
		return false
	}
	_, ok := c.liveSlot(n)
	return !ok
}

// SetLiveReply records the server's reply to turn j (live mode): every
// later turn whose list still holds turn j's assistant segment sends it in
// that slot. An empty reply leaves the slot out (no message is ever
// empty).
func (c *Conversation) SetLiveReply(j int, content string) {
	if c.live == nil {
		c.live = make(map[int]string)
	}
	c.live[j] = content
}

// Messages returns the full message list of turn k (any k, in any order;
// the history is implied by the trace). Contents of non-slot messages
// re-encode to exactly Tokens tokens, and they sum to the recorded in.
func (c *Conversation) Messages(k int) ([]Message, error) {
	chain, err := c.segments(k)
	if err != nil {
		return nil, err
	}
	out := make([]Message, 0, len(chain))
	var buf []byte
	for _, ni := range chain {
		n := &c.nodes[ni]
		if c.skipped(n) {
			continue
		}
		m := Message{Role: roleNames[n.role], LiveReplyTo: -1, Tokens: n.tokens(), ToolResult: n.tool}
		if c.s.opt.Live && n.role == roleAssistant {
			m.LiveReplyTo = int(n.reply)
		}
		if r, ok := c.liveSlot(n); ok {
			m.Content = r
		} else {
			buf = buf[:0]
			c.forSpans(n, func(sp []span) { buf = c.s.c.appendText(buf, sp) })
			m.Content = string(buf)
		}
		out = append(out, m)
	}
	return out, nil
}

// MarkerPlacement says where AppendMessagesJSONAt puts a cache-bust marker
// (the --cache-bust targets of docs/replay.md).
type MarkerPlacement uint8

// Marker placements.
const (
	// FirstUserPrefix prepends marker+"\n\n" to the first user message
	// (first_turn_prefix, the AgentX lock).
	FirstUserPrefix MarkerPlacement = iota
	// FirstUserSuffix appends "\n\n"+marker to the first user message
	// (first_turn_suffix).
	FirstUserSuffix
	// SystemPrefix prepends marker+"\n\n" to the system message
	// (system_prefix, the legacy MVP lock); without a system message it
	// goes to the first message.
	SystemPrefix
	// SystemSuffix appends "\n\n"+marker to the system message
	// (system_suffix); without a system message, to the first message.
	SystemSuffix
)

// AppendMessagesJSON appends turn k's messages as a JSON array of
// {"role","content"} objects to dst. When marker is not empty,
// marker+"\n\n" is prepended to the first user message's content (the
// first_turn_prefix cache bust). Block text comes pre-escaped from the
// corpus, so the cost is one copy of the output bytes plus a map lookup
// per block; it allocates only when dst must grow.
func (c *Conversation) AppendMessagesJSON(dst []byte, k int, marker string) ([]byte, error) {
	return c.AppendMessagesJSONAt(dst, k, marker, FirstUserPrefix)
}

// AppendMessagesJSONAt is AppendMessagesJSON with the marker at the given
// placement.
func (c *Conversation) AppendMessagesJSONAt(dst []byte, k int, marker string, at MarkerPlacement) ([]byte, error) {
	dst, _, err := c.appendMessages(dst, k, marker, at, nil, 0)
	return dst, err
}

// AppendMessagesJSONAtMost is AppendMessagesJSONAt for a list of at most
// limit bytes: it returns false, with dst holding part of the list, as
// soon as the list is longer. A caller that sends small lists from a
// buffer and larger ones as a stream (WriteMessagesJSONAt, whose length
// MessagesJSONLenAt gives) then renders a small list once, without asking
// its length first.
func (c *Conversation) AppendMessagesJSONAtMost(dst []byte, k int, marker string, at MarkerPlacement, limit int) ([]byte, bool, error) {
	start := len(dst)
	dst, _, err := c.appendMessages(dst, k, marker, at, nil, limit)
	if errors.Is(err, errOverLimit) {
		return dst, false, nil
	}
	return dst, err == nil && len(dst)-start <= limit, err
}

// errOverLimit stops appendMessages at its limit.
var errOverLimit = errors.New("synth: message list over its limit")

// appendMessages renders turn k's message list into dst. With w set, dst
// is written to w (and reset) whenever it holds flushAt bytes or more, so
// that the list never needs a buffer of its own size
// (WriteMessagesJSONAt), and the bytes written so far are returned; the
// caller writes what is left in dst. Without w, dst grows to hold it all.
func (c *Conversation) appendMessages(dst []byte, k int, marker string, at MarkerPlacement, w io.Writer, limit int) ([]byte, int64, error) {
	chain, target, err := c.messageChain(k, marker, at)
	if err != nil {
		return dst, 0, err
	}
	var written int64
	start := len(dst)
	if w == nil {
		size := 2 + len(marker) + 8
		for _, ni := range chain {
			if n := &c.nodes[ni]; !c.skipped(n) {
				size += 32 + n.tokens()*5
			}
		}
		if limit > 0 {
			size = min(size, limit+flushAt)
		}
		dst = slices.Grow(dst, size)
	}
	suffix := at == FirstUserSuffix || at == SystemSuffix
	dst = append(dst, '[')
	first := true
	for i, ni := range chain {
		n := &c.nodes[ni]
		if c.skipped(n) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, `{"role":"`...)
		dst = append(dst, roleNames[n.role]...)
		dst = append(dst, `","content":"`...)
		if i == target && !suffix {
			dst = jsonx.AppendStringBody(dst, marker)
			dst = append(dst, `\n\n`...)
		}
		if r, ok := c.liveSlot(n); ok {
			dst = jsonx.AppendStringBody(dst, r)
		} else {
			// The node's memoised spans: a node already rendered (every
			// earlier message of a conversation) costs no lookup of its
			// blocks, and a stream, which renders what MessagesJSONLenAt
			// memoised, never reads the trace's hash ids (a mapped cache
			// file) while the request is being written.
			for _, r := range c.nodeSpans(ni) {
				dst = c.s.c.appendEscaped(dst, c.arena[r.off:r.off+r.n])
				switch {
				case w != nil && len(dst) >= flushAt:
					m, err := w.Write(dst)
					written += int64(m)
					if err != nil {
						return dst[:0], written, err
					}
					dst = dst[:0]
				case limit > 0 && len(dst)-start > limit:
					return dst, 0, errOverLimit
				}
			}
		}
		if i == target && suffix {
			dst = append(dst, `\n\n`...)
			dst = jsonx.AppendStringBody(dst, marker)
		}
		dst = append(dst, `"}`...)
	}
	return append(dst, ']'), written, nil
}

// messageChain returns turn k's segments in order and the index in it of
// the message that carries the marker (-1 without a marker).
func (c *Conversation) messageChain(k int, marker string, at MarkerPlacement) ([]int32, int, error) {
	chain, err := c.segments(k)
	if err != nil {
		return nil, -1, err
	}
	target := -1
	if marker == "" {
		return chain, target, nil
	}
	for i, ni := range chain {
		n := &c.nodes[ni]
		if c.skipped(n) {
			continue
		}
		switch at {
		case FirstUserPrefix, FirstUserSuffix:
			if n.role == roleUser {
				target = i
			}
		default:
			if n.role == roleSystem {
				target = i
			}
		}
		if target >= 0 {
			break
		}
	}
	if target < 0 {
		target = 0
	}
	return chain, target, nil
}
