package prompttext

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentperf/agentperf/text/tokenizer"
)

// DefaultBlockSize is the block size used when Options.BlockSize is 0.
const DefaultBlockSize = blockTokens

// Options configures New. The zero value is valid: seed 0, 64-token
// blocks, no on-disk cache, pre-canned assistant text, no logging.
type Options struct {
	// Seed is the root random seed (--random-seed). The corpus text and the
	// hash-id → block mapping depend on it.
	Seed int64
	// BlockSize is the trace block size; 0 means 64, the only supported
	// value.
	BlockSize int
	// CacheDir is where the tokenized corpus is cached (beside the dataset
	// cache); "" disables the on-disk cache.
	CacheDir string
	// Live selects live assistant responses
	// (AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES): assistant segments
	// become slots for the server's replies (see the package doc).
	Live bool
	// Logf receives diagnostics (cache rebuilds, merged cut points); nil
	// discards them.
	Logf func(string, ...any)

	// corpusBytes overrides the generated corpus size (tests).
	corpusBytes int
}

// Synthesizer maps hash ids to block text and reconstructs conversations.
// It is immutable after New and safe for concurrent use by many lanes.
type Synthesizer struct {
	tok      tokenizer.Tokenizer
	opt      Options
	c        *corpus
	baseSeed uint64
	cacheHit bool
}

// BaseSeed returns the corpus base seed derived from the root seed as
// aiperf derives it: the first 8 bytes (big-endian) of
// SHA-256("<seed>:dataset.coding_content.corpus").
func BaseSeed(seed int64) uint64 {
	d := sha256.Sum256([]byte(strconv.FormatInt(seed, 10) + ":dataset.coding_content.corpus"))
	return binary.BigEndian.Uint64(d[:8])
}

// New builds the tokenized corpus for tok and opt.Seed, or loads it from
// opt.CacheDir when a valid cache file is there (a corrupt or stale file is
// rebuilt and rewritten atomically).
func New(tok tokenizer.Tokenizer, opt Options) (*Synthesizer, error) {
	if tok == nil {
		return nil, errors.New("synth: nil tokenizer")
	}
	if opt.BlockSize == 0 {
		opt.BlockSize = DefaultBlockSize
	}
	if opt.BlockSize != blockTokens {
		return nil, fmt.Errorf("synth: block size %d is not supported (only %d, the weka block size)", opt.BlockSize, blockTokens)
	}
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	size := opt.corpusBytes
	if size <= 0 {
		size = defaultCorpusBytes
	}
	c, hit, err := loadOrBuildCorpus(tok, opt.Seed, size, opt.CacheDir, opt.Logf)
	if err != nil {
		return nil, err
	}
	return &Synthesizer{tok: tok, opt: opt, c: c, baseSeed: BaseSeed(opt.Seed), cacheHit: hit}, nil
}

// Tokenizer returns the synthesis tokenizer.
func (s *Synthesizer) Tokenizer() tokenizer.Tokenizer { return s.tok }

// Live reports whether the synthesizer is in live-assistant mode.
func (s *Synthesizer) Live() bool { return s.opt.Live }

// CorpusTokens returns the size of the tokenized corpus in tokens.
func (s *Synthesizer) CorpusTokens() int { return s.c.tokens }

// Describe returns run metadata: the tokenizer's name and whether it is
// approximate, the corpus size and version, the seed and the mode.
func (s *Synthesizer) Describe() map[string]any {
	return map[string]any{
		"tokenizer":                s.tok.Name(),
		"tokenizer_approximate":    s.tok.Approximate(),
		"corpus_version":           CorpusVersion,
		"corpus_tokens":            s.c.tokens,
		"corpus_units":             s.c.units(),
		"corpus_bytes":             len(s.c.text),
		"corpus_cache_hit":         s.cacheHit,
		"random_seed":              s.opt.Seed,
		"base_seed":                s.baseSeed,
		"block_size":               s.opt.BlockSize,
		"live_assistant_responses": s.opt.Live,
	}
}

// BlockText returns the text of hash id in scope (a trace id): exactly 64
// tokens under the synthesis tokenizer, identical for the same (seed,
// scope, id) in any process.
func (s *Synthesizer) BlockText(scope string, id uint32) string {
	rng := seedFrom(blockKey(nil, s.baseSeed, scope, id))
	spans := s.c.fill(nil, blockTokens, &rng)
	return string(s.c.appendText(nil, spans))
}

// TailText returns the position-keyed synthesized text of n tokens for
// turn of conversation conv (docs/prompt-synthesis.md, "Keys").
func (s *Synthesizer) TailText(conv string, turn, n int) string {
	rng := seedFrom(tailKey(nil, conv, turn))
	spans := s.c.fill(nil, n, &rng)
	return string(s.c.appendText(nil, spans))
}
