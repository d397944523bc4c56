package prompttext

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/internal/testshared"
	"github.com/agentperf/agentperf/text/tokenizer"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenTrace is a small hand-made trace with an extension, a pull-back and
// a partial tail in every turn.
func goldenTrace() *dataset.Trace {
	return &dataset.Trace{
		ID: "golden_trace", BlockSize: 64, ToolTokens: 150, SystemTokens: 30,
		Requests: []dataset.Request{
			req(6*64+17, 90, seq(1, 6)...),
			req(10*64+5, 200, seq(1, 10)...),
			req(12*64+33, 64, cat(seq(1, 8), seq(40, 43))...),
			req(14*64+1, 10, cat(seq(1, 8), seq(40, 45))...),
		},
	}
}

// TestGoldenBytes pins the bytes of a few turns (seed 0, builtin
// tokenizer): the same seed gives the same prompt bytes in every process
// and on every machine. Run with -update after a deliberate change (and
// bump CorpusVersion).
func TestGoldenBytes(t *testing.T) {
	s := testSynth(t)
	c, err := s.Conversation(goldenTrace())
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	fmt.Fprintf(&got, "corpus v%d tokens=%d\n", CorpusVersion, s.CorpusTokens())
	for k := 0; k < c.NumTurns(); k++ {
		b, err := c.AppendMessagesJSON(nil, k, "")
		if err != nil {
			t.Fatal(err)
		}
		d := sha256.Sum256(b)
		fmt.Fprintf(&got, "turn %d: %d bytes sha256=%s\n", k, len(b), hex.EncodeToString(d[:]))
	}
	path := filepath.Join("testdata", "golden_builtin_seed0.txt")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGoldenBytes -update to create it)", err)
	}
	if got.String() != string(want) {
		t.Errorf("prompt bytes changed:\n got:\n%s\nwant:\n%s", got.String(), want)
	}
}

// TestSeedChangesBytes: a different seed gives different prompt bytes
// with the same token counts.
func TestSeedChangesBytes(t *testing.T) {
	tok := tokenizer.Builtin()
	s0, s1 := synthFor(t, tok, 0, false), synthFor(t, tok, 1, false)
	c0, err := s0.Conversation(goldenTrace())
	if err != nil {
		t.Fatal(err)
	}
	c1, err := s1.Conversation(goldenTrace())
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < c0.NumTurns(); k++ {
		m0, _ := c0.Messages(k)
		m1, _ := c1.Messages(k)
		if len(m0) != len(m1) {
			t.Fatalf("turn %d: %d vs %d messages", k, len(m0), len(m1))
		}
		for i := range m0 {
			if m0[i].Content == m1[i].Content {
				t.Errorf("turn %d message %d is identical under seeds 0 and 1", k, i)
			}
			if m0[i].Tokens != m1[i].Tokens || tokenizer.Count(tok, m1[i].Content) != m1[i].Tokens {
				t.Errorf("turn %d message %d: token counts differ across seeds", k, i)
			}
		}
	}
}

// TestBlockIdentity: the same (scope, id) always gives the same text;
// different ids, and the same id in another scope, give different text.
// (A block is two independent runs from ~10^4 corpus positions plus
// fillers, so the chance that two given ids collide is about 10^-8; the
// sample sizes keep the expected number of colliding pairs far below 1.)
func TestBlockIdentity(t *testing.T) {
	check := func(t *testing.T, s *Synthesizer, n uint32) {
		seen := make(map[string]uint32)
		for id := uint32(0); id < n; id++ {
			txt := s.BlockText("trace_a", id)
			if prev, dup := seen[txt]; dup {
				t.Fatalf("hash ids %d and %d give the same text", prev, id)
			}
			seen[txt] = id
		}
	}
	t.Run("builtin", func(t *testing.T) { check(t, testSynth(t), 4000) })
	t.Run("qwen3", func(t *testing.T) {
		testshared.SkipIfShort(t, "the real Qwen3 tokenizer over the corpus")
		check(t, synthFor(t, realTokenizer(t, "qwen3"), 42, false), 10000)
	})
	s := testSynth(t)
	if first, again := s.BlockText("trace_a", 7), s.BlockText("trace_a", 7); first != again {
		t.Error("same id, different text")
	}
	if s.BlockText("trace_a", 7) == s.BlockText("trace_b", 7) {
		t.Error("scopes do not separate hash ids")
	}
	// A conversation uses exactly BlockText for its blocks.
	tr := &dataset.Trace{ID: "trace_a", BlockSize: 64, Requests: []dataset.Request{req(3*64, 0, 7, 8, 9)}}
	c, _ := s.Conversation(tr)
	m, _ := c.Messages(0)
	if want := s.BlockText("trace_a", 7) + s.BlockText("trace_a", 8) + s.BlockText("trace_a", 9); m[0].Content != want {
		t.Error("conversation block text differs from BlockText")
	}
}

// TestSeamsRandomOrder concatenates random blocks and tails of random sizes
// in random order and checks the token count is exactly the sum, with the
// builtin and the real tokenizers (each skipped, saying so, without
// ../shared).
func TestSeamsRandomOrder(t *testing.T) {
	for _, name := range []string{"builtin", "deepseek_v3", "qwen3"} {
		t.Run(name, func(t *testing.T) {
			var tok tokenizer.Tokenizer = tokenizer.Builtin()
			if name != "builtin" {
				tok = realTokenizer(t, name)
			}
			s := synthFor(t, tok, 7, false)
			r := rand.New(rand.NewPCG(1, 2))
			for trial := 0; trial < 300; trial++ {
				var b strings.Builder
				want := 0
				for p := r.IntN(12) + 1; p > 0; p-- {
					if r.IntN(3) == 0 {
						n := r.IntN(200) + 1
						b.WriteString(s.TailText(fmt.Sprintf("c%d", trial), p, n))
						want += n
					} else {
						b.WriteString(s.BlockText("scope", r.Uint32()))
						want += 64
					}
				}
				if got := tokenizer.Count(tok, b.String()); got != want {
					t.Fatalf("trial %d: %d tokens, want %d", trial, got, want)
				}
			}
		})
	}
}

// TestAppendMessagesJSON: the JSON is valid, equals Messages, carries the
// marker once at the requested placement, and appends to dst.
func TestAppendMessagesJSON(t *testing.T) {
	s := testSynth(t)
	noSystem := goldenTrace()
	noSystem.ToolTokens, noSystem.SystemTokens = 0, 0
	const marker = "[rid:0123456789ab]"
	for _, tr := range []*dataset.Trace{goldenTrace(), noSystem} {
		c, err := s.Conversation(tr)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < c.NumTurns(); k++ {
			want, _ := c.Messages(k)
			for _, tc := range []struct {
				mk   string
				at   MarkerPlacement
				role string // message that carries the marker ("" = first message)
				pre  bool
			}{
				{"", FirstUserPrefix, "", true},
				{marker, FirstUserPrefix, RoleUser, true},
				{marker, FirstUserSuffix, RoleUser, false},
				{marker, SystemPrefix, RoleSystem, true},
				{marker, SystemSuffix, RoleSystem, false},
			} {
				prefix := []byte(`{"model":"m","messages":`)
				b, err := c.AppendMessagesJSONAt(append([]byte(nil), prefix...), k, tc.mk, tc.at)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(b, prefix) {
					t.Fatal("dst prefix not kept")
				}
				var got []struct{ Role, Content string }
				if err := json.Unmarshal(b[len(prefix):], &got); err != nil {
					t.Fatalf("turn %d: invalid JSON: %v", k, err)
				}
				if len(got) != len(want) {
					t.Fatalf("turn %d: %d messages, want %d", k, len(got), len(want))
				}
				target := -1
				for i := range want {
					if want[i].Role == tc.role {
						target = i
						break
					}
				}
				if target < 0 {
					target = 0
				}
				for i := range want {
					content := want[i].Content
					if tc.mk != "" && i == target {
						if tc.pre {
							content = tc.mk + "\n\n" + content
						} else {
							content += "\n\n" + tc.mk
						}
					}
					if got[i].Role != want[i].Role || got[i].Content != content {
						t.Errorf("%s turn %d message %d differs from Messages (marker %q at %d)", tr.ID, k, i, tc.mk, tc.at)
					}
				}
				if b2, _ := c.AppendMessagesJSON(nil, k, tc.mk); tc.at == FirstUserPrefix && !bytes.Equal(b2, b[len(prefix):]) {
					t.Error("AppendMessagesJSON differs from AppendMessagesJSONAt(FirstUserPrefix)")
				}
			}
		}
	}
}

// TestLiveSlots: in live mode assistant segments are slots naming the turn
// whose reply fills them; the reply is kept while the segment survives a
// pull-back (also when sliced) and disappears with it.
func TestLiveSlots(t *testing.T) {
	s := synthFor(t, tokenizer.Builtin(), 0, true)
	tr := &dataset.Trace{ID: "live", BlockSize: 64, Requests: []dataset.Request{
		req(3*64+5, 200, seq(1, 3)...),                   // u
		req(9*64+1, 100, seq(1, 9)...),                   // u a(reply 0)[3,7) u
		req(12*64+2, 70, seq(1, 12)...),                  // ... a(reply 1)[9,11) u
		req(10*64+3, 10, cat(seq(1, 5), seq(50, 54))...), // pull-back slicing reply 0's segment
		req(4*64+4, 10, cat(seq(1, 2), seq(60, 61))...),  // pull-back deleting it
	}}
	c, err := s.Conversation(tr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetLiveReply(0, "LIVE REPLY ZERO")
	c.SetLiveReply(1, "")
	slots := func(k int) map[int]string {
		msgs, err := c.Messages(k)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int]string{}
		for _, m := range msgs {
			if m.Role == RoleAssistant {
				if m.LiveReplyTo < 0 {
					t.Fatalf("turn %d: assistant message without LiveReplyTo in live mode", k)
				}
				out[m.LiveReplyTo] = m.Content
			} else if m.LiveReplyTo != -1 {
				t.Fatalf("turn %d: %s message has LiveReplyTo %d", k, m.Role, m.LiveReplyTo)
			}
			if m.Content == "" {
				t.Fatalf("turn %d: empty %s message", k, m.Role)
			}
		}
		return out
	}
	if got := slots(1); len(got) != 1 || got[0] != "LIVE REPLY ZERO" {
		t.Errorf("turn 1 slots = %v; want reply 0", got)
	}
	got := slots(2)
	if len(got) != 1 || got[0] != "LIVE REPLY ZERO" {
		t.Errorf("turn 2 slots = %v; want reply 0 live and reply 1 left out (empty live reply: never pre-canned text)", got)
	}
	if got := slots(3); len(got) < 1 || got[0] != "LIVE REPLY ZERO" {
		t.Errorf("turn 3 slots = %v; the sliced segment of reply 0 must keep the live reply", got)
	}
	if !c.Info(3).Reset {
		t.Error("turn 3 is a reset_context turn; the live reply survives it")
	}
	if got := slots(4); len(got) != 0 {
		t.Errorf("turn 4 slots = %v; want none (the pull-back deleted reply 0's segment; reply 3 is unknown and left out)", got)
	}
	c.SetLiveReply(3, "LIVE REPLY THREE")
	if got := slots(4); len(got) != 1 || got[3] != "LIVE REPLY THREE" {
		t.Errorf("turn 4 slots = %v; want reply 3", got)
	}
	b, err := c.AppendMessagesJSON(nil, 2, "")
	if err != nil || !bytes.Contains(b, []byte(`"content":"LIVE REPLY ZERO"`)) {
		t.Errorf("JSON of turn 2 lacks the live reply: %v", err)
	}
}

// TestSubagentSharesScope: a subagent's hash ids decode like the parent's.
func TestSubagentSharesScope(t *testing.T) {
	s := testSynth(t)
	tr := &dataset.Trace{ID: "parent", BlockSize: 64,
		Requests:  []dataset.Request{req(2*64, 0, 1, 2)},
		Subagents: []dataset.Subagent{{AgentID: "explore_001", Requests: []dataset.Request{req(2*64+9, 0, 1, 2)}}},
	}
	pc, _ := s.Conversation(tr)
	sc, err := s.SubagentConversation(tr, &tr.Subagents[0])
	if err != nil {
		t.Fatal(err)
	}
	pm, _ := pc.Messages(0)
	sm, _ := sc.Messages(0)
	if !strings.HasPrefix(sm[0].Content, pm[0].Content) || sm[0].Content == pm[0].Content {
		t.Error("subagent blocks must equal the parent's, followed by its own tail")
	}
}

// TestCorpusText: ASCII, no special-token text, no trailing whitespace,
// deterministic per seed and different across seeds.
func TestCorpusText(t *testing.T) {
	a := generateCorpus(3, 200<<10)
	if !bytes.Equal(a, generateCorpus(3, 200<<10)) {
		t.Fatal("generator is not deterministic")
	}
	if bytes.Equal(a, generateCorpus(4, 200<<10)) {
		t.Fatal("generator ignores the seed")
	}
	for i, c := range a {
		if c >= 0x80 || c < 0x20 && c != '\n' && c != '\t' {
			t.Fatalf("byte %d is %#x; the corpus must be printable ASCII", i, c)
		}
	}
	for _, bad := range []string{"<|", "<think", "<tool_", " \n", "\t\n"} {
		if bytes.Contains(a, []byte(bad)) {
			t.Errorf("corpus contains %q", bad)
		}
	}
	if a[len(a)-1] != '\n' {
		t.Error("corpus does not end with a newline")
	}
}

// TestCorpusCache: the cache file is written, reused (same blocks), and a
// corrupt or truncated file is rebuilt, never trusted.
func TestCorpusCache(t *testing.T) {
	dir := t.TempDir()
	tok := tokenizer.Builtin()
	var logs []string
	opt := Options{Seed: 5, CacheDir: dir, Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }, corpusBytes: 100 << 10}
	s1, err := New(tok, opt)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "synth-corpus-*.bin"))
	if len(files) != 1 || s1.Describe()["corpus_cache_hit"] != false {
		t.Fatalf("want one cache file after a cold build, got %v", files)
	}
	s2, err := New(tok, opt)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Describe()["corpus_cache_hit"] != true || s2.BlockText("x", 1) != s1.BlockText("x", 1) {
		t.Fatal("warm open did not reuse the cache or changed the blocks")
	}
	data, _ := os.ReadFile(files[0])
	for name, bad := range map[string][]byte{
		"flipped":   func() []byte { b := bytes.Clone(data); b[len(b)/2] ^= 1; return b }(),
		"truncated": data[:len(data)-20],
		"empty":     nil,
	} {
		t.Run(name, func(t *testing.T) {
			logs = nil
			if err := os.WriteFile(files[0], bad, 0o644); err != nil {
				t.Fatal(err)
			}
			s3, err := New(tok, opt)
			if err != nil {
				t.Fatal(err)
			}
			if s3.Describe()["corpus_cache_hit"] != false || len(logs) == 0 || s3.BlockText("x", 1) != s1.BlockText("x", 1) {
				t.Fatalf("corrupt cache not rebuilt cleanly (logs %q)", logs)
			}
			if fixed, _ := os.ReadFile(files[0]); !bytes.Equal(fixed, data) {
				t.Fatal("rebuilt cache file differs from the original")
			}
		})
	}
}

// FuzzDecodeCorpusCache: the cache reader never panics and rejects
// anything that is not a valid file for the text and key.
func FuzzDecodeCorpusCache(f *testing.F) {
	s, err := New(tokenizer.Builtin(), Options{corpusBytes: 16 << 10})
	if err != nil {
		f.Fatal(err)
	}
	key := corpusKey(s.tok, 0, 16<<10)
	valid := encodeCorpusCache(s.c, key)
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add([]byte(cacheMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		text, off, count, err := decodeCorpusCache(data, key)
		if err != nil {
			return
		}
		if len(off) != len(count)+1 || int(off[len(off)-1]) != len(text) {
			t.Fatalf("accepted inconsistent cache: %d offsets, %d counts", len(off), len(count))
		}
	})
}

// TestNewErrors: unsupported options fail with a clear error.
func TestNewErrors(t *testing.T) {
	if _, err := New(tokenizer.Builtin(), Options{BlockSize: 32}); err == nil || !strings.Contains(err.Error(), "block size 32") {
		t.Errorf("BlockSize 32: err = %v", err)
	}
	if _, err := New(nil, Options{}); err == nil {
		t.Error("nil tokenizer accepted")
	}
	s := testSynth(t)
	if _, err := s.Conversation(&dataset.Trace{ID: "x", BlockSize: 16}); err == nil {
		t.Error("block_size 16 trace accepted")
	}
	c, _ := s.Conversation(goldenTrace())
	if _, err := c.Messages(99); err == nil {
		t.Error("out-of-range turn accepted")
	}
}

// pairTokenizer makes one token of every two bytes from the text start, so
// token boundaries depend on everything before them: no line start is a
// stable cut point under it.
type pairTokenizer struct{}

func (pairTokenizer) Name() string      { return "pairs" }
func (pairTokenizer) Approximate() bool { return true }
func (pairTokenizer) Decode([]uint32) string {
	return ""
}
func (pairTokenizer) Encode(s string) []uint32 {
	return make([]uint32, (len(s)+1)/2)
}

// TestUnsupportedTokenizer: a tokenizer without stable cut points is
// refused with an explanation instead of drifting.
func TestUnsupportedTokenizer(t *testing.T) {
	_, err := New(pairTokenizer{}, Options{corpusBytes: 64 << 10})
	if err == nil || !strings.Contains(err.Error(), "cannot be built") {
		t.Fatalf("err = %v; want a refusal naming the reason", err)
	}
}

// TestConcurrentLanes: one Synthesizer serves many goroutines, each with
// its own Conversation of the same trace, and they all build the same
// bytes (run with -race).
func TestConcurrentLanes(t *testing.T) {
	s := testSynth(t)
	want := make([][]byte, 4)
	c0, err := s.Conversation(goldenTrace())
	if err != nil {
		t.Fatal(err)
	}
	for k := range want {
		want[k], _ = c0.AppendMessagesJSON(nil, k, "")
	}
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			c, err := s.Conversation(goldenTrace())
			if err != nil {
				errs <- err
				return
			}
			for rep := 0; rep < 20; rep++ {
				for k := len(want) - 1; k >= 0; k-- { // any order
					got, err := c.AppendMessagesJSON(nil, k, "")
					if err != nil || !bytes.Equal(got, want[k]) {
						errs <- fmt.Errorf("lane %d turn %d: different bytes (%v)", g, k, err)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
