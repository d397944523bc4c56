package prompttext_test

import (
	"fmt"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// A trace turn becomes chat messages whose contents re-encode to exactly
// the recorded input tokens; the second turn keeps the first turn's blocks
// byte for byte and adds the synthesized reply and the new user input.
func Example() {
	tok := tokenizer.Builtin()
	s, err := prompttext.New(tok, prompttext.Options{Seed: 42})
	if err != nil {
		panic(err)
	}
	tr := &dataset.Trace{ID: "demo", BlockSize: 64, ToolTokens: 100, SystemTokens: 20,
		Requests: []dataset.Request{
			{In: 5*64 + 10, Out: 100, HashIDs: []uint32{1, 2, 3, 4, 5}},
			{In: 9 * 64, HashIDs: []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9}},
		}}
	conv, err := s.Conversation(tr)
	if err != nil {
		panic(err)
	}
	for k := 0; k < conv.NumTurns(); k++ {
		msgs, _ := conv.Messages(k)
		total := 0
		fmt.Printf("turn %d:", k)
		for _, m := range msgs {
			n := tokenizer.Count(tok, m.Content)
			total += n
			fmt.Printf(" %s=%d", m.Role, n)
		}
		fmt.Printf("  total %d, recorded %d\n", total, tr.Requests[k].In)
	}
	body, _ := conv.AppendMessagesJSON([]byte(`{"messages":`), 1, "[rid:0123456789ab]")
	fmt.Println(string(body[:41]))
	// Output:
	// turn 0: system=128 user=202  total 330, recorded 330
	// turn 1: system=128 user=192 assistant=128 user=128  total 576, recorded 576
	// {"messages":[{"role":"system","content":"
}
