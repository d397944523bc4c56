package prompttext

import (
	"bufio"
	"fmt"
	"io"
	"testing"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// BenchmarkCorpusBuild measures generating, tokenizing and verifying the
// corpus (a cold New without cache) per tokenizer.
func BenchmarkCorpusBuild(b *testing.B) {
	toks := map[string]func(b *testing.B) tokenizer.Tokenizer{
		"builtin":     func(*testing.B) tokenizer.Tokenizer { return tokenizer.Builtin() },
		"deepseek_v3": func(b *testing.B) tokenizer.Tokenizer { return realTokenizer(b, "deepseek_v3") },
		"qwen3":       func(b *testing.B) tokenizer.Tokenizer { return realTokenizer(b, "qwen3") },
	}
	for _, name := range []string{"builtin", "deepseek_v3", "qwen3"} {
		b.Run(name, func(b *testing.B) {
			tok := toks[name](b)
			b.ReportAllocs()
			var s *Synthesizer
			for i := 0; i < b.N; i++ {
				var err error
				if s, err = New(tok, Options{Seed: int64(i)}); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(s.c.text)))
			b.ReportMetric(float64(s.CorpusTokens()), "corpus-tokens")
		})
	}
}

// BenchmarkCorpusCacheOpen measures New when the corpus cache file is
// valid (read and verify the file, escape the text, bucket the units).
func BenchmarkCorpusCacheOpen(b *testing.B) {
	dir := b.TempDir()
	tok := tokenizer.Builtin()
	if _, err := New(tok, Options{CacheDir: dir}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := New(tok, Options{CacheDir: dir})
		if err != nil || s.Describe()["corpus_cache_hit"] != true {
			b.Fatal("cache miss", err)
		}
	}
}

// benchTrace is a two-turn trace whose turn 1 has about tokens tokens (a
// 12k-token system prompt, the rest user/assistant).
func benchTrace(tokens int) *dataset.Trace {
	n := uint32(tokens / 64)
	return &dataset.Trace{ID: fmt.Sprintf("bench_%d", tokens), BlockSize: 64, ToolTokens: min(11000, tokens/4), SystemTokens: 1000,
		Requests: []dataset.Request{
			req(int(n-20)*64+17, 300, seq(1, n-20)...),
			req(tokens, 0, seq(1, n)...),
		}}
}

// BenchmarkAppendMessagesJSON measures building the messages JSON of a
// turn: "warm" is the steady state of a lane (block spans memoised by the
// conversation), "cold" includes creating the conversation and deriving
// every block.
func BenchmarkAppendMessagesJSON(b *testing.B) {
	s := synthFor(b, tokenizer.Builtin(), 0, false)
	for _, tokens := range []int{10_000, 100_000, 200_000} {
		tr := benchTrace(tokens)
		b.Run(fmt.Sprintf("warm/%dk", tokens/1000), func(b *testing.B) {
			c, err := s.Conversation(tr)
			if err != nil {
				b.Fatal(err)
			}
			buf, err := c.AppendMessagesJSON(nil, 1, "[rid:0123456789ab]")
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				buf, _ = c.AppendMessagesJSON(buf[:0], 1, "[rid:0123456789ab]")
			}
		})
		b.Run(fmt.Sprintf("cold/%dk", tokens/1000), func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c, err := s.Conversation(tr)
				if err != nil {
					b.Fatal(err)
				}
				buf, _ = c.AppendMessagesJSON(buf[:0], 1, "[rid:0123456789ab]")
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}

// BenchmarkConversation measures the planner and segment geometry of the
// longest real trace.
func BenchmarkConversation(b *testing.B) {
	traces := realTraces(b)
	best := &traces[0]
	for i := range traces {
		if len(traces[i].Requests) > len(best.Requests) {
			best = &traces[i]
		}
	}
	s := synthFor(b, tokenizer.Builtin(), 0, false)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := s.Conversation(best); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(best.Requests)), "turns")
}

// BenchmarkWriteMessagesJSON compares the two ways a client sends a turn's
// messages, both through a 4 KiB bufio.Writer (an HTTP client's usual write
// buffer) into io.Discard, in the steady state of a lane: "append" builds
// the list in a reused buffer and writes it (one large write);
// "stream" takes its length and renders it into the writer
// (MessagesJSONLenAt + WriteMessagesJSONAt).
func BenchmarkWriteMessagesJSON(b *testing.B) {
	s := synthFor(b, tokenizer.Builtin(), 0, false)
	const mk = "[rid:0123456789ab]"
	for _, tokens := range []int{10_000, 100_000, 200_000} {
		tr := benchTrace(tokens)
		c, err := s.Conversation(tr)
		if err != nil {
			b.Fatal(err)
		}
		buf, err := c.AppendMessagesJSON(nil, 1, mk)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(io.Discard, 4<<10)
		b.Run(fmt.Sprintf("append/%dk", tokens/1000), func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				buf, _ = c.AppendMessagesJSON(buf[:0], 1, mk)
				w.Write(buf)
				w.Flush()
			}
		})
		b.Run(fmt.Sprintf("stream/%dk", tokens/1000), func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := c.MessagesJSONLenAt(1, mk, FirstUserPrefix); err != nil {
					b.Fatal(err)
				}
				c.WriteMessagesJSONAt(w, 1, mk, FirstUserPrefix)
				w.Flush()
			}
		})
	}
}
