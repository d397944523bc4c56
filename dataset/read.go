package dataset

import (
	"errors"
	"io"
)

// ReadOptions controls how traces are read.
type ReadOptions struct {
	// SkipInvalid skips malformed traces (counting them in ReadStats)
	// instead of failing on the first one.
	SkipInvalid bool
}

// ReadStats reports what a read saw.
type ReadStats struct {
	// Traces is the number of traces returned.
	Traces int
	// Skipped is the number of malformed traces skipped (SkipInvalid only).
	Skipped int
	// Errors holds the first few skip reasons.
	Errors []error
	// SubagentEntries and SubagentRequests count subagent entries and the
	// requests inside them (recursively) over the returned traces.
	SubagentEntries, SubagentRequests int
}

// ReadJSONL reads one trace per line from r. name is used in error positions.
func ReadJSONL(r io.Reader, name string, opt ReadOptions) ([]Trace, ReadStats, error) {
	return nil, ReadStats{}, errors.New("dataset: ReadJSONL not implemented yet")
}

// ReadTraceJSON parses one trace (one file of the directory layout).
func ReadTraceJSON(data []byte, name string) (Trace, error) {
	return Trace{}, errors.New("dataset: ReadTraceJSON not implemented yet")
}

// ReadPath reads a .jsonl/.json file (optionally .zst/.gz) or a directory of
// *.json[.zst|.gz] files in sorted name order.
func ReadPath(path string, opt ReadOptions) ([]Trace, ReadStats, error) {
	return nil, ReadStats{}, errors.New("dataset: ReadPath not implemented yet")
}
