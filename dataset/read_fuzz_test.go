package dataset

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzReadJSONL feeds arbitrary bytes to the trace reader. It must never
// panic; every failure must be a *TraceError of a known kind; and whatever
// it accepts must survive WriteJSONL → ReadJSONL unchanged.
func FuzzReadJSONL(f *testing.F) {
	f.Add([]byte(contractExample))
	f.Add([]byte(traceLine("a", req(`"think_time":null,"ttft":0.5`)) + "\n" + traceLine("b", req(""))))
	f.Add([]byte(traceLine("n", req("")+`,{"t":0.5,"type":"subagent","duration_ms":null,"requests":[{"t":0.1,"type":"subagent","requests":[`+req("")+`]}]}`)))
	f.Add([]byte(`{"id":"e\u00e9\ud83d","requests":[{"t":1e2,"type":"s","input_length":1,"output_length":2,"hash_ids":[4294967295]}],"totals":{"a":[true,false,null]}}`))
	f.Add([]byte(`{"id":"x","block_size":0,"requests":[]}`))
	f.Add([]byte("{\"id\":\"x\",\"requests\":[{\"t\":1,\"type\":\"n\",\"in\":1,\"out\":1,\"hash_ids\":[01]}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		traces, st, err := ReadJSONL(bytes.NewReader(data), "fuzz.jsonl", ReadOptions{})
		if err != nil {
			var te *TraceError
			if !errors.As(err, &te) {
				t.Fatalf("error %v (%T) is not a *TraceError", err, err)
			}
			known := false
			for _, k := range []error{ErrMalformedJSON, ErrUnknownField, ErrMissingField, ErrWrongType, ErrOutOfRange, ErrDuplicateTraceID, ErrHashIDScope, ErrBlockSize, ErrEmptyTrace} {
				known = known || errors.Is(err, k)
			}
			if !known || te.Line < 1 {
				t.Fatalf("error %v has no kind or no line", err)
			}
			// skipping must never fail on a parse error
			if _, _, err := ReadJSONL(bytes.NewReader(data), "fuzz.jsonl", ReadOptions{SkipInvalid: true}); err != nil {
				t.Fatalf("SkipInvalid failed: %v", err)
			}
			return
		}
		if st.Traces != len(traces) {
			t.Fatalf("stats %d traces, returned %d", st.Traces, len(traces))
		}
		var w1 bytes.Buffer
		if err := WriteJSONL(&w1, traces); err != nil {
			t.Fatal(err)
		}
		again, _, err := ReadJSONL(bytes.NewReader(w1.Bytes()), "rewritten.jsonl", ReadOptions{})
		if err != nil {
			t.Fatalf("re-reading written traces: %v\n%s", err, w1.Bytes())
		}
		if len(again) != len(traces) {
			t.Fatalf("re-read %d traces, want %d", len(again), len(traces))
		}
		for i := range traces {
			if d := diffTrace(&again[i], &traces[i]); d != "" {
				t.Fatalf("trace %d changed through WriteJSONL: %s", i, d)
			}
		}
		for i := range traces {
			PrefixHits(&traces[i])
		}
		ComputeStats(traces)
	})
}
