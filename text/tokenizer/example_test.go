package tokenizer_test

import (
	"fmt"

	"github.com/agentperf/agentperf/text/tokenizer"
)

func ExampleBuiltin() {
	tok := tokenizer.Builtin()
	ids := tok.Encode("func main() { fmt.Println(\"hello\") }")
	fmt.Println(len(ids), tok.CountTokens("func main() { fmt.Println(\"hello\") }"))
	fmt.Println(tok.Decode(ids))
	fmt.Println(tok.Name(), tok.Approximate())
	// Output:
	// 12 12
	// func main() { fmt.Println("hello") }
	// builtin true
}

func ExampleResolve() {
	// "builtin" needs no files; a path or an HF model id in the local hub
	// cache loads the model's own tokenizer.
	tok, err := tokenizer.Resolve("testdata/tiny.tokenizer.json", func(string) string { return "" })
	if err != nil {
		fmt.Println(err)
		return
	}
	ids := tok.Encode("the cat<|end|>")
	fmt.Println(ids, tokenizer.Count(tok, "the cat<|end|>"))
	fmt.Printf("%q\n", tok.Decode(ids))
	// Output:
	// [116 257 261 268] 4
	// "the cat<|end|>"
}

func ExampleLoadTiktoken() {
	tok, err := tokenizer.LoadTiktoken("testdata/tiny.tiktoken", "cl100k", map[string]uint32{"<|endoftext|>": 1000})
	if err != nil {
		fmt.Println(err)
		return
	}
	ids := tok.Encode("hello main<|endoftext|>")
	fmt.Println(ids)
	fmt.Printf("%q\n", tok.Decode(ids))
	// Output:
	// [278 290 1000]
	// "hello main<|endoftext|>"
}
