package chattemplate

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/internal/testshared"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// BenchmarkRender200k renders one request of a long agentic conversation:
// a 200,000-token message list (counted with the model's own tokenizer;
// a system prompt, then 99 user/assistant turns), as a client that sends
// rendered prompts would per request. SetBytes is the rendered prompt's
// size, so MB/s reads as the rendering rate.
func BenchmarkRender200k(b *testing.B) {
	dir := testshared.Path(b, "tokenizers")
	for _, model := range models {
		b.Run(model, func(b *testing.B) {
			tmpl, err := LoadBeside(filepath.Join(dir, model+".tokenizer.json.zst"))
			if err != nil {
				b.Fatal(err)
			}
			tok, err := tokenizer.Resolve(filepath.Join(dir, model+".tokenizer.json.zst"), func(string) string { return "" })
			if err != nil {
				b.Fatal(err)
			}
			msgs := longConversation(tok, 200_000)
			out, err := tmpl.Render(msgs, true)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(out)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := tmpl.Render(msgs, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// longConversation is a system prompt and alternating user/assistant
// messages of code-like text whose contents total tokens tokens.
func longConversation(tok tokenizer.Tokenizer, tokens int) []Message {
	var para strings.Builder
	for i := range 40 {
		fmt.Fprintf(&para, "func handler%d(w http.ResponseWriter, r *http.Request) {\n\tif err := r.ParseForm(); err != nil {\n\t\thttp.Error(w, err.Error(), 400)\n\t\treturn\n\t}\n}\n", i)
	}
	block := para.String()
	per := len(tok.Encode(block))
	n := max(tokens/per, 2)
	msgs := []Message{{"system", strings.Repeat(block, n/10+1)}}
	left := n - (n/10 + 1)
	for i := 0; left > 0; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		k := min(max(left/50, 1), left)
		msgs = append(msgs, Message{role, strings.Repeat(block, k)})
		left -= k
	}
	if msgs[len(msgs)-1].Role != "user" {
		msgs = append(msgs, Message{"user", "continue"})
	}
	return msgs
}
