package dataset_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/agentperf/agentperf/dataset"
)

func ExampleReadJSONL() {
	corpus := `{"id":"demo","requests":[` +
		`{"t":0,"type":"n","in":192,"out":48,"hash_ids":[0,1,2]},` +
		`{"t":9,"type":"subagent","agent_id":"agent_001","requests":[{"t":0.5,"type":"n","in":128,"out":24,"hash_ids":[0,5]}]},` +
		`{"t":15,"type":"n","in":448,"out":64,"hash_ids":[0,1,2,3,4,6,7],"think_time":null}]}` + "\n" +
		`{"id":"bad","requests":[{"t":0,"type":"n","in":64,"out":-1,"hash_ids":[0]}]}` + "\n"

	_, _, err := dataset.ReadJSONL(strings.NewReader(corpus), "traces.jsonl", dataset.ReadOptions{})
	var te *dataset.TraceError
	if errors.As(err, &te) {
		fmt.Println(te.File, te.Line, te.TraceID, te.Field, errors.Is(err, dataset.ErrOutOfRange))
	}

	traces, st, _ := dataset.ReadJSONL(strings.NewReader(corpus), "traces.jsonl", dataset.ReadOptions{SkipInvalid: true})
	t := traces[0]
	fmt.Println(len(traces), "trace;", st.Skipped, "skipped")
	fmt.Println(len(t.Requests), "parent requests; subagent after request", t.Subagents[0].After, "at t =", t.Subagents[0].Requests[0].T)
	// Output:
	// traces.jsonl 2 bad requests[0].out true
	// 1 trace; 1 skipped
	// 2 parent requests; subagent after request 1 at t = 9.5
}

func ExampleTracePrefixHits() {
	// The example of docs/weka-traces.md: R0 [0,1,2], R1 [0..4], subagent
	// [0,5], R2 [0..4,6,7].
	tr, _ := dataset.ReadTraceJSON([]byte(`{"id":"demo","requests":[
		{"t":0,"type":"n","in":192,"out":48,"hash_ids":[0,1,2]},
		{"t":6.5,"type":"n","in":320,"out":32,"hash_ids":[0,1,2,3,4]},
		{"t":9,"type":"subagent","requests":[{"t":9,"type":"n","in":128,"out":24,"hash_ids":[0,5]}]},
		{"t":15,"type":"n","in":448,"out":64,"hash_ids":[0,1,2,3,4,6,7]}]}`), "demo.json")
	parent, sub := dataset.TracePrefixHits(&tr)
	fmt.Println(parent, sub)
	st := dataset.ComputeStats([]dataset.Trace{tr})
	fmt.Printf("%d/%d (%s)\n", st.TheoreticalHitRate.Hits, st.TheoreticalHitRate.Total, st.TheoreticalHitRate.Definition)
	// Output:
	// [{0 3} {3 5} {5 7}] [{1 2}]
	// 9/17 (C: aiperf leading-run, trace scope incl. subagents, all requests)
}

func ExampleSynthesize() {
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 1, Traces: 3, Subagents: true})
	var buf bytes.Buffer
	if err := dataset.WriteJSONL(&buf, traces); err != nil {
		panic(err)
	}
	back, _, err := dataset.ReadJSONL(&buf, "synth.jsonl", dataset.ReadOptions{})
	fmt.Println(len(back), err, back[0].ID, back[0].BlockSize, back[0].HashIDScope)
	// Output:
	// 3 <nil> synth_0000 64 local
}
