// Package tokenizer provides the tokenizers agentperf uses to synthesize
// prompts with exact token counts: byte-level BPE tokenizers loaded from a
// Hugging Face tokenizer.json, tiktoken rank files, and a builtin
// approximate tokenizer that needs no files.
//
// [Resolve] turns a --tokenizer value into a [Tokenizer]: "builtin", a
// tokenizer.json[.zst] or tiktoken file, a folder, or a Hugging Face model id
// found in the local hub cache. [ResolveContext] with a hub client also
// downloads a model's tokenizer files when the cache lacks them, and says
// where the tokenizer came from ([Origin]).
//
// [LoadHF] implements what byte-level models (Llama-3, Qwen2/3,
// DeepSeek-V3, gpt-oss) use from the Hugging Face tokenizers library:
// normalizers (NFC/NFD/NFKC/NFKD, Lowercase, Prepend, Replace, Sequence),
// pre-tokenizers (Split with Oniguruma-style patterns, ByteLevel, Digits,
// Sequence), the BPE model (both merges formats, ignore_merges), added
// tokens and the ByteLevel decoder. The pre-tokenizer patterns of these
// models have hand-written matchers; other patterns run on regexp2. Token
// ids equal those of the Rust library on the fixtures in testdata (see
// testdata/README.md).
//
// [Builtin] is lossless and prefix-stable and packs each token's bytes into
// its id; its counts are plausible (a few bytes per token) but are no
// model's. Every tokenizer here is safe for concurrent use.
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
