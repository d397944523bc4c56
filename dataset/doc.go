// Package dataset owns the weka trace corpus: the trace model, the readers
// (JSONL with one trace per line, a directory of one-trace JSON files, either
// of them zstd- or gzip-compressed), validation with file:line errors, Hugging
// Face hub cache resolution, the content-addressed mmap cache and corpus
// statistics.
//
// The weka format (field by field in docs/weka-traces.md): per trace an
// id, a block size (64), tool and system token counts, and a
// chronological list of requests, each with input/output token counts,
// timestamps and the hash ids of its 64-token KV blocks. Subagent entries
// carry nested requests of their own.
//
// # Chain layout
//
// LayoutChains splits one list of requests (a trace's top level, or one
// subagent entry's inner requests) into chains by their hash-id prefixes,
// as AgentX v1.0's loader does: a pure, deterministic function of the
// requests and ChainOptions (docs/replay.md, "v1.0 session layout").
//
// # Reading and validation
//
// ReadPath, ReadJSONL and ReadTraceJSON parse with a strict hand-written
// scanner straight into the Trace model. The rules (aiperf's pydantic
// models use extra="forbid"; agentperf follows them and says where a file
// breaks them):
//
//   - unknown fields are errors, except the trace-level "totals" summary
//     (kv-cache-tester), which is accepted and ignored; a field given twice
//     (or "in" together with its alias "input_length", "out" with
//     "output_length") is an error;
//   - required: trace "id" (non-empty, unique in the corpus) and
//     "requests" with at least one "n"/"s" request; per request "t",
//     "type", "in", "out", "hash_ids"; per subagent entry "t" and "type";
//   - block_size defaults to 64 and must be positive; hash_id_scope
//     defaults to "local" and must be "local";
//   - counts are integers ≥ 0 (3.0 is accepted as 3); times are finite and
//     ≥ 0 (duration_ms may be any finite number); hash ids are integers in
//     [0, 2^32-1], stored as uint32;
//   - null means absent: NaN for api_time, think_time, ttft and duration_ms,
//     0 for counts, "" for strings, nil for lists;
//   - an inner subagent request (or nested entry) whose t is earlier than
//     its entry's t is relative to the entry and is shifted onto the root
//     timeline.
//
// Errors are *TraceError values naming the file, line (JSONL) or line in a
// one-trace file, byte offset, trace id, request and subrequest index and
// the JSON path of the field, wrapping one of the Err* kinds.
//
// # Statistics
//
// ComputeStats summarises a corpus; its theoretical prefix-cache hit rate
// is definition C of docs/weka-traces.md (HitDefinitionC), aiperf's since
// v1.0:
// per request, the leading run of hash ids already seen in the trace
// (parent and subagents, walked in time order), over all requests.
//
// dataset knows nothing about HTTP or time; it is pure data.
package dataset
