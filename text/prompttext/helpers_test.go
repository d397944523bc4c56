package prompttext

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentperf/agentperf/internal/testshared"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// sharedPath returns ../shared/<rel> relative to the module root, skipping
// the test when it is absent.
func sharedPath(tb testing.TB, rel string) string {
	tb.Helper()
	return testshared.Path(tb, rel)
}

var (
	hfMu    sync.Mutex
	hfToks  = map[string]tokenizer.Tokenizer{}
	synMu   sync.Mutex
	synthes = map[string]*Synthesizer{}
)

// realTokenizer loads ../shared/tokenizers/<name>.tokenizer.json.zst once
// per test binary.
func realTokenizer(tb testing.TB, name string) tokenizer.Tokenizer {
	tb.Helper()
	p := sharedPath(tb, filepath.Join("tokenizers", name+".tokenizer.json.zst"))
	hfMu.Lock()
	defer hfMu.Unlock()
	if t, ok := hfToks[name]; ok {
		return t
	}
	t, err := tokenizer.LoadHF(p)
	if err != nil {
		tb.Fatalf("load %s: %v", p, err)
	}
	hfToks[name] = t
	return t
}

// synthFor returns a shared synthesizer for (tokenizer, seed, live).
func synthFor(tb testing.TB, tok tokenizer.Tokenizer, seed int64, live bool) *Synthesizer {
	tb.Helper()
	key := fmt.Sprintf("%s|%d|%v", tok.Name(), seed, live)
	synMu.Lock()
	defer synMu.Unlock()
	if s, ok := synthes[key]; ok {
		return s
	}
	s, err := New(tok, Options{Seed: seed, Live: live})
	if err != nil {
		tb.Fatal(err)
	}
	synthes[key] = s
	return s
}

var (
	tracesOnce sync.Once
	traces200  []dataset.Trace
	tracesErr  error
)

// realTraces reads the 200-trace sample once per test binary.
func realTraces(tb testing.TB) []dataset.Trace {
	tb.Helper()
	p := sharedPath(tb, filepath.Join("traces", "kvct-200.jsonl.zst"))
	tracesOnce.Do(func() { traces200, _, tracesErr = dataset.ReadPath(p, dataset.ReadOptions{}) })
	if tracesErr != nil {
		tb.Fatalf("read %s: %v", p, tracesErr)
	}
	return traces200
}

// req builds a request with in, out and hash ids.
func req(in, out int, ids ...uint32) dataset.Request {
	return dataset.Request{In: in, Out: out, HashIDs: ids}
}

// seq returns the ids lo..hi inclusive.
func seq(lo, hi uint32) []uint32 {
	var s []uint32
	for i := lo; i <= hi; i++ {
		s = append(s, i)
	}
	return s
}

func cat(parts ...[]uint32) []uint32 {
	var s []uint32
	for _, p := range parts {
		s = append(s, p...)
	}
	return s
}
