// Package dataset owns the weka trace corpus: the trace model, the readers
// (JSONL with one trace per line, a directory of one-trace JSON files, either
// of them zstd- or gzip-compressed), validation with file:line errors, Hugging
// Face hub cache resolution, the content-addressed mmap cache and corpus
// statistics.
//
// The weka format is described in reference/aiperf-agentic-spec.md §1.2–1.5:
// per trace an id, a block size (64), tool and system token counts, and a
// chronological list of requests, each with input/output token counts,
// timestamps and the hash ids of its 64-token KV blocks. Subagent entries
// carry nested requests of their own.
//
// dataset knows nothing about HTTP or time; it is pure data.
package dataset
