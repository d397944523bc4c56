// Package prompttext turns weka trace turns into the chat messages agentperf
// sends: the project's own procedural coding-agent text corpus, the
// hash-id → 64-token block mapping, position-keyed partial tails, and the
// conversation reconstruction (segments → messages) that aiperf's loader
// does. The keys and the reconstruction rules are in
// docs/prompt-synthesis.md.
//
// # Corpus
//
// The corpus is generated text that looks like what a coding agent reads:
// Go, Python, TypeScript, Rust and shell sources, unified diffs, compiler
// errors, test output, logs, JSON tool results and file listings. It is
// ASCII, deterministic in the seed and CorpusVersion, about 1.1 MB (300k+
// tokens). New tokenizes it once per (tokenizer, seed, version) — about
// 0.2 s with a real tokenizer — and caches the result in Options.CacheDir
// as a small checksummed file written atomically; a corrupt or stale file
// is rebuilt.
//
// # Exactness
//
// aiperf decodes 64 arbitrary corpus tokens per block and concatenates the
// texts, so re-tokenizing a message drifts by a few tokens. Here every
// block is built from whole corpus units, and a unit starts at a cut point:
// the start of a non-blank line whose first byte is in a class the
// tokenizer never merges with a preceding newline (letters, digits and
// punctuation always; indentation when probing shows the tokenizer keeps
// "\n" apart from the next line's spaces, as the Hugging Face regex
// pre-tokenizers do and the builtin tokenizer does not). Every unit ends
// with '\n'. Because pre-tokenizers split at every cut point whatever
// precedes or follows it, the token count of any concatenation of units is
// the sum of their standalone counts; the builder also checks this on the
// whole corpus in its natural order and merges any unit pair that fails.
//
// A block of 64 tokens is two runs of consecutive units taken from two
// random places (the first run about half to three quarters of the block),
// then whole units of exactly the missing size (every tokenizer has a
// one-token line such as "}\n", so any remainder can be filled). Partial
// tails of n tokens are built the same way, in 64-token pieces. So every
// message content — a concatenation of block and tail texts — re-encodes
// to exactly the recorded in, under the synthesis tokenizer, before the
// chat template and the cache-bust marker. The tests prove it over every
// parent turn of the real 200-trace sample with the DeepSeek-V3 and Qwen3
// tokenizers.
//
// # Keys
//
// The base seed is the first 8 bytes of SHA-256("<seed>:dataset.coding_content.corpus"),
// aiperf's key for its coding corpus. Block (scope, id) draws its runs from
// a generator seeded with SHA-256("<base_seed>:<scope>:<hash_id>"), where
// scope is the trace id — subagents share their parent's scope, as aiperf
// does from v1.0 on. Tails are keyed by
// "<conversation id>:turn_<k>:partial_tail". The same hash id in a
// trace gives identical text in every turn and process; different ids give
// different text in practice (two independent runs over ~30k positions plus
// the fillers).
//
// # Reconstruction
//
// Conversation implements the current-fork ConversationReconstructor:
// system segment from ceil((tool+system)/64) blocks (a hard error when the
// first request has fewer hash ids), user/assistant segments over block
// ranges, longest-common-prefix truncation on pull-backs (boundary cut with
// or without overhang, cut at a segment start, mid-segment cut, lcp 0),
// assistant blocks = ceil(previous out/64), the context-loss rule, the
// trailing-user rule, the pass-1 planner's assistant caps for degenerate
// pull-backs, and the equal-context retry (a turn that changes nothing
// resends the full list). The lcp is clamped to the blocks that exist and
// to the blocks the turn covers, so the contents always sum to in. If a
// turn would still end with a non-user message (a pull-back into the
// system prompt), its last block is handed to a user message
// (TurnInfo.Relabeled). Messages always returns the full list; the
// history of a turn is implied by the trace, so any turn can be built in
// any order.
//
// # Cost
//
// New: about 0.1–0.2 s cold with a real tokenizer (generation, per-unit
// encoding on all CPUs, natural-order verification), a few ms warm from
// the cache file. Synthesizer.Conversation runs the planner and the
// segment geometry for all turns (about 0.5 ms for a 350-turn trace). A
// Conversation memoises each block's corpus spans on first use (about 50
// bytes per distinct block: ~0.6 MB for the largest sample trace, whose
// last turn has 879k tokens), after which AppendMessagesJSON copies
// pre-escaped bytes at several GB/s: ~0.25 ms for a 200k-token turn
// (~2–4 ms on first use).
//
// # Live assistant responses
//
// With Options.Live (AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES=1) the
// segment geometry is unchanged, but each assistant segment is a slot:
// Message.LiveReplyTo names the turn j whose server reply fills it (the
// segment created at turn j+1 from turn j's out), and
// Conversation.SetLiveReply(j, text) records that reply. This resolves an
// ambiguity of aiperf's live mode: it rebuilds a reset_context turn from user
// deltas only and so drops the live replies threaded so far; here the list of
// every turn is rebuilt from the segments, and a live reply is sent for as
// long as its segment survives truncation — also when a pull-back slices the
// segment (the whole reply is kept, since a server reply cannot be cut at a
// recorded block boundary), and it disappears exactly when the recording's
// prefix no longer contains that response. A slot whose reply is unknown (a
// session warm-started at a later turn) or empty is left out of the list:
// live mode sends user and system messages and the server's own replies,
// never pre-canned assistant text. Token exactness then holds for the user
// and system messages only.
package prompttext
