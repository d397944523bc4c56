package dataset

import (
	"errors"
	"io"
)

// SynthOptions controls Synthesize.
type SynthOptions struct {
	Seed      int64
	Traces    int
	Subagents bool
}

// Synthesize generates a deterministic synthetic corpus.
func Synthesize(opt SynthOptions) []Trace { return nil }

// WriteJSONL writes traces in the weka schema, one per line.
func WriteJSONL(w io.Writer, traces []Trace) error {
	return errors.New("dataset: WriteJSONL not implemented yet")
}
