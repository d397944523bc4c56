package dataset

import (
	"fmt"
	"os"
	"strings"
)

// Environment variables of the dataset cache (aiperf's names, so that the
// InferenceX runners' settings apply unchanged).
const (
	EnvCacheDir     = "AIPERF_DATASET_MMAP_CACHE_DIR"
	EnvCacheEnabled = "AIPERF_DATASET_MMAP_CACHE_ENABLED"
)

// CacheFromEnv returns the cache directory ("" = DefaultCacheDir) and
// whether the cache is on, as the environment (getenv; nil is os.Getenv)
// sets them: EnvCacheEnabled (true when unset) and EnvCacheDir. The
// directory is "" when the cache is off. An EnvCacheEnabled that is not a
// boolean is an error naming it.
func CacheFromEnv(getenv func(string) string) (dir string, enabled bool, err error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv(EnvCacheEnabled))); v {
	case "", "1", "true", "yes", "on":
	case "0", "false", "no", "off":
		return "", false, nil
	default:
		return "", false, fmt.Errorf("%s=%q: want true or false", EnvCacheEnabled, getenv(EnvCacheEnabled))
	}
	return getenv(EnvCacheDir), true, nil
}

// FromHub reports whether the corpus of s comes from the Hugging Face hub
// (and may have to be downloaded): an HF dataset, or a public alias that
// is not generated in memory, with no local file.
func (s Source) FromHub() bool {
	if s.HFDataset != "" {
		return true
	}
	if s.PublicDataset == "" || s.InputFile != "" {
		return false
	}
	_, synthetic, _ := ParseSynthetic(s.PublicDataset)
	return !synthetic
}
