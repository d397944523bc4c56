package dataset

import (
	"errors"
	"fmt"
	"os"
)

// WekaHF is aiperf's generic Hugging Face weka loader, which a public
// dataset may name: alone it is the alias of the default corpus; together
// with an HF dataset it is the loader of that dataset.
const WekaHF = "weka_hf"

// Choice is a corpus as a command line chooses it (agentperf's corpus
// flags, with aiperf's names): where it comes from, how it is read and
// selected, and the dataset cache. Source and Options turn it into what
// Open takes; errors name the fields of Source and SelectOptions, so that
// a caller can say them in its own terms.
type Choice struct {
	// InputFile, PublicDataset and HFDataset are those of Source, except
	// that PublicDataset WekaHF together with an HFDataset names aiperf's
	// generic HF weka loader of that dataset, which is the HFDataset.
	InputFile, PublicDataset, HFDataset string
	Read                                ReadOptions
	Select                              SelectOptions
	// CacheDir, when set, is the dataset cache directory, and turns the
	// cache on whatever the environment says.
	CacheDir string
	// NoCache turns the dataset cache off, over CacheDir and the
	// environment.
	NoCache bool
}

// source is the Source c names, unchecked.
func (c Choice) source() Source {
	public := c.PublicDataset
	if public == WekaHF && c.HFDataset != "" {
		// The generic loader, the repository from HFDataset (alone,
		// weka_hf is the alias of the 062126 corpus).
		public = ""
	}
	return Source{InputFile: c.InputFile, PublicDataset: public, HFDataset: c.HFDataset}
}

// Source returns the Source c names. A negative selection limit is a
// *FieldError naming its SelectOptions field (SelectOptions.Validate); a
// choice that names no corpus is an error saying how to name one. Open
// checks the rest (more than one corpus, a missing file, an unknown
// alias).
func (c Choice) Source() (Source, error) {
	if err := c.Select.Validate(); err != nil {
		return Source{}, err
	}
	src := c.source()
	if src == (Source{}) {
		return src, errors.New("no dataset given: pass Source.InputFile PATH, Source.PublicDataset ALIAS (e.g. synthetic) or Source.HFDataset ORG/NAME[@REV]")
	}
	return src, nil
}

// FromHub reports whether the corpus c names comes from the Hugging Face
// hub (Source.FromHub), so that Options.Hub is needed to download it.
func (c Choice) FromHub() bool { return c.source().FromHub() }

// Cache returns the dataset cache directory ("" = DefaultCacheDir) and
// whether the cache is on, from c and the environment (CacheFromEnv with
// getenv; nil is os.Getenv). c wins: NoCache turns the cache off, a
// CacheDir turns it on. An EnvCacheEnabled that is not a boolean is an
// error naming it.
func (c Choice) Cache(getenv func(string) string) (dir string, enabled bool, err error) {
	dir, enabled, err = CacheFromEnv(getenv)
	switch {
	case err != nil:
		return "", false, err
	case c.NoCache:
		return "", false, nil
	case c.CacheDir != "":
		return c.CacheDir, true, nil
	}
	return dir, enabled, nil
}

// ActiveCacheDir returns the directory of the dataset cache (Cache, with
// DefaultCacheDir for ""), or "" when the cache is off, its setting is
// invalid or there is no default directory. Other on-disk caches (the
// tokenized prompt corpus) live beside it.
func (c Choice) ActiveCacheDir(getenv func(string) string) string {
	dir, on, err := c.Cache(getenv)
	if err != nil || !on {
		return ""
	}
	if dir == "" {
		dir, _ = DefaultCacheDir() // "" (no cache) when there is none
	}
	return dir
}

// Options returns the Options of c: its read and selection options and
// its cache (Cache), with getenv (nil: os.Getenv) to look up the hub
// cache. The caller sets Hub (when FromHub) and Logf.
func (c Choice) Options(getenv func(string) string) (Options, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	dir, on, err := c.Cache(getenv)
	if err != nil {
		return Options{}, err
	}
	return Options{Read: c.Read, Select: c.Select, CacheDir: dir, CacheEnabled: on, Getenv: getenv}, nil
}

// Cacheable returns nil when the corpus of s can have a cache file, and
// otherwise why not: a corpus generated in memory (a synthetic public
// dataset) is never cached, a *FieldError for Source.PublicDataset.
func (s Source) Cacheable() error {
	if _, ok, _ := ParseSynthetic(s.PublicDataset); ok {
		return &FieldError{Field: "Source.PublicDataset", Err: fmt.Errorf("%s is generated in memory and never cached", s.PublicDataset)}
	}
	return nil
}
