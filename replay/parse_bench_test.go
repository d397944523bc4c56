package replay

import "testing"

// Benchmarks of the per-response parsing on the simulator's wire shapes
// (bench/run's client ceiling spends most of the client's CPU here).

var benchContentLine = []byte(`data: {"id":"chatcmpl-19821","object":"chat.completion.chunk","created":1796107888,"model":"agentperf-sim","choices":[{"index":0,"delta":{"content":" and"},"logprobs":null,"finish_reason":null}]}`)

var benchUsageLine = []byte(`data: {"id":"chatcmpl-19821","object":"chat.completion.chunk","created":1796107888,"model":"agentperf-sim","choices":[],"usage":{"prompt_tokens":21,"total_tokens":24,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":0}}}`)

var benchFullBody = []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1796107888,"model":"agentperf-sim","choices":[{"index":0,"message":{"role":"assistant","content":" and on index the build of it","refusal":null,"tool_calls":[],"reasoning_content":null},"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":228,"total_tokens":236,"completion_tokens":8,"prompt_tokens_details":{"cached_tokens":224}}}`)

func BenchmarkParseSSELine(b *testing.B) {
	for _, c := range []struct {
		name string
		line []byte
	}{{"content", benchContentLine}, {"usage", benchUsageLine}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.line)))
			done := cpuClock(b)
			for b.Loop() {
				if _, ok, err := parseSSELine(c.line, nil); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
			done()
		})
	}
}

func BenchmarkParseFullResponse(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchFullBody)))
	done := cpuClock(b)
	for b.Loop() {
		if r, err := parseFullResponse(benchFullBody, nil); !r.content || !r.hasUsage || err != nil {
			b.Fatal(r, err)
		}
	}
	done()
}

// cpuClock reports the benchmark's process CPU time per operation
// ("cpu-ns/op", getrusage) beside the wall time: on a shared machine the
// wall time per operation grows with the other processes' load, the CPU
// time much less, so A/B comparisons read cpu-ns/op. Call it before the
// loop and call the returned function after it.
func cpuClock(b *testing.B) func() {
	u0, s0, ok := processCPU()
	return func() {
		u1, s1, ok1 := processCPU()
		if ok && ok1 && b.N > 0 {
			b.ReportMetric(float64((u1-u0)+(s1-s0))/float64(b.N), "cpu-ns/op")
		}
	}
}

// BenchmarkEventShape is parseSSELine's work on a content event of a
// stream whose shape is known (every content event after the first).
func BenchmarkEventShape(b *testing.B) {
	var sh eventShape
	if _, ok, err := sh.parse(benchContentLine, nil); !ok || err != nil {
		b.Fatal(ok, err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(benchContentLine)))
	done := cpuClock(b)
	for b.Loop() {
		if ev, ok, err := sh.parse(benchContentLine, nil); !ok || err != nil || !ev.Content {
			b.Fatal(ok, err)
		}
	}
	done()
	if sh.hits == 0 {
		b.Fatal("the shape decided no event")
	}
}
