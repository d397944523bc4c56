// Package tokenizer provides the tokenizers agentperf uses to synthesize
// prompts with exact token counts: byte-level BPE tokenizers loaded from a
// Hugging Face tokenizer.json, tiktoken rank files, and a builtin
// approximate tokenizer that needs no files.
package tokenizer

// Tokenizer encodes text to token ids and back.
//
// Encode never adds special tokens (BOS/EOS); it is what
// add_special_tokens=False gives in Hugging Face tokenizers. Implementations
// are safe for concurrent use.
type Tokenizer interface {
	// Name identifies the tokenizer (a model id, a file path or "builtin").
	Name() string
	// Encode returns the token ids of text.
	Encode(text string) []uint32
	// Decode returns the text of ids. Decode(Encode(s)) == s for valid UTF-8 s.
	Decode(ids []uint32) string
	// Approximate reports whether counts only approximate the serving
	// model's tokenizer (true for the builtin tokenizer).
	Approximate() bool
}

// Counter is implemented by tokenizers that can count the tokens of a text
// without building the id slice (the builtin tokenizer does).
type Counter interface {
	CountTokens(text string) int
}

// Count returns the number of tokens of text: t.CountTokens(text) when t is a
// [Counter], else len(t.Encode(text)).
func Count(t Tokenizer, text string) int {
	if c, ok := t.(Counter); ok {
		return c.CountTokens(text)
	}
	return len(t.Encode(text))
}
