package dataset

import "fmt"

// SelectOptions controls which traces of a corpus are used. Zero values
// mean "no limit".
type SelectOptions struct {
	// MaxContextLength drops whole traces whose PeakContext(MaxOSL) exceeds
	// it (--max-context-length).
	MaxContextLength int
	// MaxOSL caps the output of parent requests when computing the peak
	// (--synthesis-max-osl); subagent requests are never capped.
	MaxOSL int
	// NumEntries keeps at most the first N eligible traces, in source order
	// (--num-dataset-entries). It is a ceiling, not a target.
	NumEntries int
}

// Validate checks that no limit is negative; the first that is makes a
// *FieldError naming its SelectOptions field ("SelectOptions.MaxOSL: -1:
// must be 0 (no limit) or positive").
func (o SelectOptions) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"MaxContextLength", o.MaxContextLength}, {"MaxOSL", o.MaxOSL}, {"NumEntries", o.NumEntries}} {
		if f.v < 0 {
			return &FieldError{Field: "SelectOptions." + f.name, Err: fmt.Errorf("%d: must be 0 (no limit) or positive", f.v)}
		}
	}
	return nil
}

// SelectStats reports what Select did: Loaded traces were read, Eligible
// passed the context filter (DroppedOverContext did not), and Total were
// kept ("loaded Total of Loaded").
type SelectStats struct {
	Loaded, Eligible, Total, DroppedOverContext int
}

// Select applies the loader-level selection of aiperf (docs/weka-traces.md,
// "Selection"): first the context filter, then the ceiling, keeping source
// order. Without a
// context filter the result is a prefix of traces (same backing array);
// with one it is a new slice. It fails when no trace is left, saying why;
// a limit that is negative or drops every trace is a *FieldError naming
// the SelectOptions field.
func Select(traces []Trace, opt SelectOptions) ([]Trace, SelectStats, error) {
	st := SelectStats{Loaded: len(traces)}
	if err := opt.Validate(); err != nil {
		return nil, st, fmt.Errorf("select traces: %w", err)
	}
	if len(traces) == 0 {
		return nil, st, fmt.Errorf("select traces: the corpus holds no traces")
	}
	kept := traces
	if opt.MaxContextLength > 0 {
		kept = nil
		minPeak := -1
		for i := range traces {
			peak := traces[i].PeakContext(opt.MaxOSL)
			if peak > opt.MaxContextLength {
				st.DroppedOverContext++
				if minPeak < 0 || peak < minPeak {
					minPeak = peak
				}
				continue
			}
			kept = append(kept, traces[i])
		}
		if len(kept) == 0 {
			return nil, st, fmt.Errorf("select traces: %w", &FieldError{Field: "SelectOptions.MaxContextLength",
				Err: fmt.Errorf("%d drops all %d traces (the smallest peak input+output of a trace is %d tokens); raise the limit or use a corpus built for this window (e.g. a _256k variant)", opt.MaxContextLength, len(traces), minPeak)})
		}
	}
	st.Eligible = len(kept)
	if opt.NumEntries > 0 && opt.NumEntries < len(kept) {
		kept = kept[:opt.NumEntries:opt.NumEntries]
	}
	st.Total = len(kept)
	return kept, st, nil
}
