package sim_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentperf/agentperf/server/sim"
)

// A server configured from a sim:// URL, two turns of one conversation:
// the second turn's prompt extends the first, so its full blocks are
// served from the prefix cache.
func Example() {
	cfg, err := sim.ParseURL("sim://?zero-latency=true&max-model-len=8192&kv-capacity-tokens=65536", sim.DefaultConfig())
	if err != nil {
		panic(err)
	}
	s, err := sim.New(cfg)
	if err != nil {
		panic(err)
	}
	if err := s.Start(); err != nil {
		panic(err)
	}
	defer s.Close()

	turn1 := `{"role":"system","content":"You are a coding agent working in a Go repository with many packages and tests."},{"role":"user","content":"Run the tests and fix what fails."}`
	turn2 := turn1 + `,{"role":"assistant","content":"Running go test now."},{"role":"user","content":"ok"}`
	for _, msgs := range []string{turn1, turn2} {
		body := `{"model":"agentperf-sim","messages":[` + msgs + `],"max_tokens":4,"ignore_eos":true}`
		resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	st := s.Stats()
	fmt.Println("requests:", st.Requests, "completed:", st.Completed)
	fmt.Println("cached tokens > 0:", st.CachedTokens > 0)
	// Output:
	// requests: 2 completed: 2
	// cached tokens > 0: true
}

// ParseURL rejects unknown settings by name.
func ExampleParseURL() {
	_, err := sim.ParseURL("sim://?max-modle-len=8192", sim.DefaultConfig())
	fmt.Println(err != nil && strings.Contains(err.Error(), `unknown setting "max-modle-len"`))
	// Output: true
}
