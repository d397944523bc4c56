package prompttext

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/internal/testshared"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// exactnessReport re-encodes every parent turn of traces and returns the
// number of turns checked and a description of every miss. Identical
// segment nodes have identical content (nodes are immutable and their text
// depends only on the node), so each node's content is encoded once per
// conversation and reused by every turn that sends it.
func exactnessReport(t *testing.T, s *Synthesizer, traces []dataset.Trace) (turns int, tokens int64, misses []string) {
	tok := s.Tokenizer()
	type result struct {
		turns  int
		tokens int64
		misses []string
	}
	jobs := make(chan int)
	results := make(chan result)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				tr := &traces[i]
				var r result
				conv, err := s.Conversation(tr)
				if err != nil {
					r.misses = append(r.misses, fmt.Sprintf("%s: %v", tr.ID, err))
					results <- r
					continue
				}
				memo := map[int32]int{}
				var buf []byte
				for k := 0; k < conv.NumTurns(); k++ {
					chain, err := conv.segments(k)
					if err != nil {
						r.misses = append(r.misses, fmt.Sprintf("%s turn %d: %v", tr.ID, k, err))
						continue
					}
					sum := 0
					for _, ni := range chain {
						n, ok := memo[ni]
						if !ok {
							buf = buf[:0]
							node := &conv.nodes[ni]
							conv.forSpans(node, func(sp []span) { buf = s.c.appendText(buf, sp) })
							n = tokenizer.Count(tok, string(buf))
							memo[ni] = n
							if n != node.tokens() {
								r.misses = append(r.misses, fmt.Sprintf("%s turn %d node %d (%s, %d blocks, tail %d): encodes to %d, built for %d",
									tr.ID, k, ni, roleNames[node.role], node.count, node.tail, n, node.tokens()))
							}
							r.tokens += int64(n)
						}
						sum += n
					}
					r.turns++
					if sum != tr.Requests[k].In {
						r.misses = append(r.misses, fmt.Sprintf("%s turn %d: contents encode to %d tokens, recorded in=%d (diff %+d)",
							tr.ID, k, sum, tr.Requests[k].In, sum-tr.Requests[k].In))
					}
				}
				results <- r
			}
		}()
	}
	go func() {
		for i := range traces {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	for r := range results {
		turns += r.turns
		tokens += r.tokens
		misses = append(misses, r.misses...)
	}
	sort.Strings(misses)
	return turns, tokens, misses
}

// TestExactnessRealCorpus proves the core promise: for every parent turn of
// the 200 real traces, the synthesized message contents re-encode, with the
// real tokenizer, to exactly the recorded in tokens.
func TestExactnessRealCorpus(t *testing.T) {
	skipUnderRace(t)
	traces := realTraces(t)
	for _, name := range []string{"deepseek_v3", "qwen3"} {
		t.Run(name, func(t *testing.T) {
			testshared.SkipIfShort(t, "re-encodes ~60M tokens; skipped with -short (the builtin variant still runs)")
			tok := realTokenizer(t, name)
			checkExact(t, synthFor(t, tok, 42, false), traces)
		})
	}
}

// TestExactnessBuiltin is the fast variant with the builtin tokenizer over
// the first traces of the sample.
func TestExactnessBuiltin(t *testing.T) {
	skipUnderRace(t)
	traces := realTraces(t)
	if testing.Short() {
		traces = traces[:40]
	}
	checkExact(t, synthFor(t, tokenizer.Builtin(), 0, false), traces)
}

func checkExact(t *testing.T, s *Synthesizer, traces []dataset.Trace) {
	t.Helper()
	turns, tokens, misses := exactnessReport(t, s, traces)
	t.Logf("%s: %d traces, %d parent turns, %d distinct segment tokens re-encoded, %d misses",
		s.Tokenizer().Name(), len(traces), turns, tokens, len(misses))
	if turns == 0 {
		t.Fatal("no turns checked")
	}
	if len(misses) > 0 {
		show := misses
		if len(show) > 30 {
			show = show[:30]
		}
		t.Fatalf("%d of %d turns/segments are not exact:\n%s", len(misses), turns, strings.Join(show, "\n"))
	}
}

// skipUnderRace skips the whole-corpus tests under -race: they re-encode
// ~100M tokens single-mindedly and the race detector makes them ten times
// slower without finding anything (TestConcurrentLanes covers concurrent
// use). .ci/run runs them again without -race.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("whole-corpus test skipped under -race; run `go test -run 'TestExactness|TestRealTraceInvariants' ./synth` without -race (CI does)")
	}
}
