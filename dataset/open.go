package dataset

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentperf/agentperf/internal/hfhub"
)

// Source names where a corpus comes from. Exactly one of InputFile,
// PublicDataset and HFDataset is set, except that PublicDataset may be
// "weka_trace" together with InputFile (aiperf's local weka loader).
type Source struct {
	// InputFile is a local .jsonl/.json file (optionally .zst/.gz) or a
	// directory of one-trace JSON files (--input-file).
	InputFile string
	// PublicDataset is a --public-dataset alias (see ResolveAlias), or
	// "synthetic" / "synthetic:seed=N,traces=M,subagents=true" for a corpus
	// generated in memory by Synthesize.
	PublicDataset string
	// HFDataset is "org/name[@revision]" in the local hub cache, downloaded
	// into it when Options.Hub is set (--hf-dataset).
	HFDataset string
}

// Options controls Open. The zero value reads with default options and no
// cache.
type Options struct {
	Read   ReadOptions
	Select SelectOptions
	// CacheDir holds cache files; "" means DefaultCacheDir().
	CacheDir string
	// CacheEnabled turns the content-addressed cache on.
	CacheEnabled bool
	// Getenv looks up HF hub cache variables; nil means os.Getenv.
	Getenv func(string) string
	// Hub, when set, downloads an HF corpus (--public-dataset,
	// --hf-dataset) that the hub cache lacks; nil reads the cache only and
	// never touches the network. A corpus in the cache is used without a
	// request either way.
	Hub *hfhub.Client
	// Logf receives warnings (a cache that cannot be used, a corrupt cache
	// file being rebuilt); nil discards them.
	Logf func(format string, args ...any)
}

func (o *Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// DefaultCacheDir returns the default cache directory,
// <user cache dir>/agentperf/dataset (e.g. ~/.cache/agentperf/dataset).
// When there is none, the error is a *FieldError for Options.CacheDir (the
// setting that replaces it).
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", &FieldError{Field: "Options.CacheDir", Err: fmt.Errorf("not set, and there is no default dataset cache directory (%w): set it", err)}
	}
	return filepath.Join(d, "agentperf", "dataset"), nil
}

// sourcePlan is a resolved Source.
type sourcePlan struct {
	ident Identity // SourceType, Loader, Path, HF fields
	path  string   // absolute file or directory to read ("" for synthetic)
	fi    os.FileInfo
	synth *SynthOptions
}

// ParseSynthetic parses "synthetic" or "synthetic:seed=N,traces=M,subagents=BOOL,
// subagent-share=F,min-turns=N,max-turns=N,max-context=TOKENS,time-scale=F"
// (any subset of the keys, in any order; subagent-share needs
// subagents=true). ok is false when s does not name a synthetic corpus at
// all.
func ParseSynthetic(s string) (opt SynthOptions, ok bool, err error) {
	rest, found := strings.CutPrefix(s, "synthetic")
	if !found || (rest != "" && rest[0] != ':') {
		return SynthOptions{}, false, nil
	}
	rest = strings.TrimPrefix(rest, ":")
	if rest == "" {
		return opt, true, nil
	}
	for _, kv := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(kv, "=")
		var perr error
		switch k {
		case "seed":
			opt.Seed, perr = strconv.ParseInt(v, 10, 64)
		case "traces":
			opt.Traces, perr = strconv.Atoi(v)
			if perr == nil && opt.Traces <= 0 {
				perr = errors.New("must be positive")
			}
		case "subagents":
			opt.Subagents, perr = strconv.ParseBool(v)
		case "min-turns", "max-turns", "max-context":
			var n int
			n, perr = strconv.Atoi(v)
			if perr == nil && n <= 0 {
				perr = errors.New("must be positive")
			}
			switch k {
			case "min-turns":
				opt.MinTurns = n
			case "max-turns":
				opt.MaxTurns = n
			default:
				opt.MaxContext = n
			}
		case "time-scale":
			opt.TimeScale, perr = strconv.ParseFloat(v, 64)
			if perr == nil && !(opt.TimeScale > 0 && opt.TimeScale <= MaxSynthTimeScale) {
				perr = fmt.Errorf("must be in (0, %g]", float64(MaxSynthTimeScale))
			}
		case "subagent-share":
			opt.SubagentShare, perr = strconv.ParseFloat(v, 64)
			if perr == nil && !(opt.SubagentShare > 0 && opt.SubagentShare <= MaxSubagentShare) {
				perr = fmt.Errorf("must be in (0, %g]", MaxSubagentShare)
			}
		default:
			perr = errors.New("unknown key")
		}
		if perr != nil {
			return SynthOptions{}, true, fmt.Errorf("invalid synthetic dataset %q: %s=%q: %v (%s)", s, k, v, perr, syntheticUsage)
		}
	}
	switch {
	case opt.SubagentShare > 0 && !opt.Subagents:
		return SynthOptions{}, true, fmt.Errorf("invalid synthetic dataset %q: subagent-share is the share of requests in subagents and needs subagents=true (%s)", s, syntheticUsage)
	case opt.MinTurns > 0 && opt.MaxTurns > 0 && opt.MinTurns > opt.MaxTurns:
		return SynthOptions{}, true, fmt.Errorf("invalid synthetic dataset %q: min-turns=%d is above max-turns=%d (%s)", s, opt.MinTurns, opt.MaxTurns, syntheticUsage)
	}
	return opt, true, nil
}

const syntheticUsage = "expected synthetic:seed=N,traces=M,subagents=true|false,subagent-share=F,min-turns=N,max-turns=N,max-context=TOKENS,time-scale=F"

func resolveSource(ctx context.Context, src Source, getenv func(string) string, hub *hfhub.Client) (sourcePlan, error) {
	n := 0
	for _, s := range []string{src.InputFile, src.PublicDataset, src.HFDataset} {
		if s != "" {
			n++
		}
	}
	if src.PublicDataset == "weka_trace" && src.InputFile != "" && src.HFDataset == "" {
		n = 1
	}
	switch {
	case n == 0:
		return sourcePlan{}, errors.New("no dataset given: set Source.InputFile, Source.PublicDataset (e.g. synthetic) or Source.HFDataset")
	case n > 1:
		return sourcePlan{}, fmt.Errorf("more than one dataset given (input file %q, public dataset %q, HF dataset %q): pass exactly one", src.InputFile, src.PublicDataset, src.HFDataset)
	}
	if src.InputFile != "" {
		abs, err := filepath.Abs(src.InputFile)
		if err != nil {
			return sourcePlan{}, &FieldError{Field: "Source.InputFile", Err: err}
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return sourcePlan{}, &FieldError{Field: "Source.InputFile", Err: err}
		}
		st := "file"
		if fi.IsDir() {
			st = "dir"
		}
		return sourcePlan{ident: Identity{SourceType: st, Loader: "weka_trace", Path: abs}, path: abs, fi: fi}, nil
	}
	var ref HFRef
	var loader, aliasPath, aliasCommit string
	if src.HFDataset != "" {
		r, err := ParseHFDataset(src.HFDataset)
		if err != nil {
			return sourcePlan{}, err
		}
		ref, loader = r, "weka_hf"
	} else {
		so, ok, err := ParseSynthetic(src.PublicDataset)
		if err != nil {
			return sourcePlan{}, err
		}
		if ok {
			return sourcePlan{ident: Identity{SourceType: "synthetic", Loader: "synthetic", Path: src.PublicDataset}, synth: &so}, nil
		}
		r, p, c, err := FetchAliasHF(ctx, src.PublicDataset, getenv, hub)
		if err != nil {
			return sourcePlan{}, err
		}
		ref, loader, aliasPath, aliasCommit = r, src.PublicDataset, p, c
	}
	path, commit := aliasPath, aliasCommit
	if path == "" {
		var err error
		if path, commit, err = FetchHF(ctx, ref, getenv, hub); err != nil {
			return sourcePlan{}, err
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return sourcePlan{}, fmt.Errorf("HF dataset %s: %w", ref, err)
	}
	rev := ref.Revision
	if rev == "" {
		rev = "main"
	}
	file := ref.File
	if file == "" {
		file = DefaultHFFile
	}
	return sourcePlan{
		ident: Identity{SourceType: "hf", Loader: loader, Path: path, HFRepo: ref.Repo, HFRevision: rev, HFCommit: commit, HFSplit: "train"},
		path:  path, fi: fi,
	}, nil
}

// Open loads the corpus src names, applies opt.Read and opt.Select, and
// returns it.
//
// With opt.CacheEnabled, the selected corpus is served from a
// content-addressed cache file in opt.CacheDir (docs/cache-format.md). The
// key covers the source content (the HF snapshot commit and file, or the
// SHA-256 of a local file or directory, found through a stat-keyed index so
// that a warm open reads neither the source nor its hash), the options that
// change what is loaded, and the format version. A warm open maps the file
// and validates its header and index: milliseconds, whatever the corpus
// size. On a miss Open takes a per-key file lock (so concurrent builders,
// in this or other processes, build once and share the result), reads and
// selects the source, writes the file atomically and maps it.
//
// A cache problem never fails Open: a corrupt or foreign-version file is
// rebuilt, and an unusable cache directory falls back to an in-memory
// corpus, each with a warning through opt.Logf. Errors are about the input
// (missing or malformed source, bad options, nothing selected) or ctx.
//
// Synthetic corpora are generated in memory and never cached.
func Open(ctx context.Context, src Source, opt Options) (*Corpus, error) {
	getenv := opt.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	plan, err := resolveSource(ctx, src, getenv, opt.Hub)
	if err != nil {
		return nil, err
	}
	if plan.synth != nil {
		traces := Synthesize(*plan.synth)
		return selectInMemory(traces, ReadStats{Traces: len(traces)}, plan, opt)
	}
	if !opt.CacheEnabled {
		return loadInMemory(ctx, plan, opt)
	}
	dir := opt.CacheDir
	if dir == "" {
		if dir, err = DefaultCacheDir(); err != nil {
			opt.logf("dataset cache disabled: %v", err)
			return loadInMemory(ctx, plan, opt)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		opt.logf("dataset cache disabled: cannot create %s: %v; loading into memory", dir, err)
		return loadInMemory(ctx, plan, opt)
	}
	loc, err := locate(ctx, dir, plan, opt)
	if err != nil {
		return nil, err
	}
	path := loc.Path

	c, err := openKeyed(path, loc.Key)
	if err == nil {
		return finishHit(c, plan, loc), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		opt.logf("warning: %v; rebuilding it", err)
	}
	lock, lerr := lockFile(ctx, path+".lock")
	if lerr != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		opt.logf("dataset cache disabled: %v; loading into memory", lerr)
		return loadInMemory(ctx, plan, opt)
	}
	defer lock.unlock()
	// Another builder may have finished while this one waited. Its file is
	// warned about only if the first attempt found none (else the warning
	// was given).
	if c, err2 := openKeyed(path, loc.Key); err2 == nil {
		return finishHit(c, plan, loc), nil
	} else if !errors.Is(err2, fs.ErrNotExist) && errors.Is(err, fs.ErrNotExist) {
		opt.logf("warning: %v; rebuilding it", err2)
	}
	removeStaleTemps(path, opt)
	traces, meta, err := load(ctx, plan, opt)
	if err != nil {
		return nil, err
	}
	if meta.Identity.SHA256 == "" {
		meta.Identity.SHA256 = loc.sha256
	}
	if err := fillSHA256(ctx, &meta.Identity, plan); err != nil {
		return nil, err
	}
	meta.Key = loc.Key
	if err := writeCache(path, traces, meta); err != nil {
		opt.logf("dataset cache disabled: %v; using the corpus from memory", err)
		return newMemCorpus(traces, meta), nil
	}
	// The file was written from these traces a moment ago: skip the hash-id
	// checksum (the next open verifies it and marks it).
	c, err = openCacheTrusted(path)
	if err != nil {
		opt.logf("warning: cannot map the dataset cache just written: %v; using the corpus from memory", err)
		return newMemCorpus(traces, meta), nil
	}
	return c, nil
}

// openKeyed opens the cache file at path and checks that it was built for
// key (a file copied or renamed to another key's name is not trusted).
func openKeyed(path, key string) (*Corpus, error) {
	c, err := openCache(path, verifyAuto)
	if err != nil {
		return nil, err
	}
	if c.meta.Key != key {
		c.Close()
		return nil, fmt.Errorf("open dataset cache %s: %w", path, corruptf("file was built for key %q, not %q", c.meta.Key, key))
	}
	return c, nil
}

// removeStaleTemps deletes temporary files left next to path by builders
// that died mid-write. It runs under the key's lock, which every builder
// holds while it writes, so no live builder owns one.
func removeStaleTemps(path string, opt Options) {
	stale, _ := filepath.Glob(path + ".tmp-*")
	for _, f := range stale {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			opt.logf("warning: cannot remove stale temporary file %s: %v", f, err)
		}
	}
}

func finishHit(c *Corpus, plan sourcePlan, loc Location) *Corpus {
	c.fromCache = true
	// The content is the same; where it was read from this time may differ.
	id := &c.meta.Identity
	id.SourceType, id.Loader, id.Path = plan.ident.SourceType, plan.ident.Loader, plan.ident.Path
	id.HFRepo, id.HFRevision, id.HFCommit, id.HFSplit = plan.ident.HFRepo, plan.ident.HFRevision, plan.ident.HFCommit, plan.ident.HFSplit
	if loc.sha256 != "" {
		id.SHA256 = loc.sha256
	}
	return c
}

// Location is where a source's cache file lives.
type Location struct {
	// Key is the content-addressed cache key (32 hex digits).
	Key string
	// Path is the cache file.
	Path string
	// Exists reports whether the file exists (it may still be corrupt).
	Exists bool
	// Hashed reports that the source had to be read and hashed because the
	// stat index had no current record of it.
	Hashed bool
	sha256 string
}

// Locate returns the cache file that Open would use for src and opt,
// without building it. It may hash a local source once (recording the hash
// in the stat index). It fails for synthetic sources, which are not cached.
func Locate(ctx context.Context, src Source, opt Options) (Location, error) {
	getenv := opt.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	plan, err := resolveSource(ctx, src, getenv, opt.Hub)
	if err != nil {
		return Location{}, err
	}
	if plan.synth != nil {
		return Location{}, errors.New("synthetic corpora are generated in memory and never cached")
	}
	dir := opt.CacheDir
	if dir == "" {
		if dir, err = DefaultCacheDir(); err != nil {
			return Location{}, err
		}
	}
	return locate(ctx, dir, plan, opt)
}

func locate(ctx context.Context, dir string, plan sourcePlan, opt Options) (Location, error) {
	var loc Location
	var source string
	if plan.ident.SourceType == "hf" {
		source = "hf:" + plan.ident.HFRepo + "@" + plan.ident.HFCommit + ":" + filepath.Base(plan.path)
		loc.sha256 = hfBlobSHA256(plan.path)
		if rel, err := hfRelFile(plan.path, plan.ident.HFCommit); err == nil {
			source = "hf:" + plan.ident.HFRepo + "@" + plan.ident.HFCommit + ":" + rel
		}
	} else {
		sum, hashed, ierr, err := sourceSHA256(ctx, dir, plan.path, plan.fi)
		if err != nil {
			if ctx.Err() != nil {
				return Location{}, ctx.Err()
			}
			return Location{}, fmt.Errorf("input %s: %w", plan.path, err)
		}
		if ierr != nil {
			opt.logf("warning: dataset cache source index: %v (the source will be hashed again next time)", ierr)
		}
		loc.Hashed, loc.sha256 = hashed, sum
		source = "sha256:" + sum
	}
	loc.Key = cacheKey(source, opt.Read, opt.Select)
	loc.Path = filepath.Join(dir, loc.Key+cacheExt)
	if _, err := os.Stat(loc.Path); err == nil {
		loc.Exists = true
	}
	return loc, nil
}

// hfRelFile returns path relative to its snapshots/<commit> directory.
func hfRelFile(path, commit string) (string, error) {
	dir := path
	for {
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not in a snapshot")
		}
		if filepath.Base(dir) == commit && filepath.Base(parent) == "snapshots" {
			return filepath.Rel(dir, path)
		}
		dir = parent
	}
}

// load reads and selects the source.
func load(ctx context.Context, plan sourcePlan, opt Options) ([]Trace, cacheMeta, error) {
	if err := ctx.Err(); err != nil {
		return nil, cacheMeta{}, err
	}
	traces, rs, err := ReadPath(plan.path, opt.Read)
	if err != nil {
		return nil, cacheMeta{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, cacheMeta{}, err
	}
	return selectTraces(traces, rs, plan, opt)
}

func selectTraces(traces []Trace, rs ReadStats, plan sourcePlan, opt Options) ([]Trace, cacheMeta, error) {
	sel, ss, err := Select(traces, opt.Select)
	if err != nil {
		src := plan.path
		if src == "" {
			src = plan.ident.Path
		}
		if rs.Skipped > 0 {
			return nil, cacheMeta{}, fmt.Errorf("%s: %w (%d invalid traces were skipped)", src, err, rs.Skipped)
		}
		return nil, cacheMeta{}, fmt.Errorf("%s: %w", src, err)
	}
	id := plan.ident
	id.Traces = len(sel)
	id.NumDatasetEntries = opt.Select.NumEntries
	for i := range sel {
		id.ParentRequests += len(sel[i].Requests)
		id.SubagentRequests += sel[i].NumSubagentRequests()
	}
	return sel, cacheMeta{Identity: id, Read: readMetaFromStats(rs), Select: ss}, nil
}

func loadInMemory(ctx context.Context, plan sourcePlan, opt Options) (*Corpus, error) {
	traces, meta, err := load(ctx, plan, opt)
	if err != nil {
		return nil, err
	}
	if err := fillSHA256(ctx, &meta.Identity, plan); err != nil {
		return nil, err
	}
	return newMemCorpus(traces, meta), nil
}

// fillSHA256 records the content hash of the source in id if it is not
// known yet: the HF blob name when it is a SHA-256, else a streamed hash.
func fillSHA256(ctx context.Context, id *Identity, plan sourcePlan) error {
	if id.SHA256 != "" || plan.path == "" {
		return nil
	}
	if plan.ident.SourceType == "hf" {
		if id.SHA256 = hfBlobSHA256(plan.path); id.SHA256 != "" {
			return nil
		}
	}
	stamps, err := sourceStamps(plan.path, plan.fi)
	if err != nil {
		return fmt.Errorf("input %s: %w", plan.path, err)
	}
	sum, err := hashSource(ctx, plan.path, stamps, plan.fi.IsDir())
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("input %s: %w", plan.path, err)
	}
	id.SHA256 = sum
	return nil
}

func selectInMemory(traces []Trace, rs ReadStats, plan sourcePlan, opt Options) (*Corpus, error) {
	sel, meta, err := selectTraces(traces, rs, plan, opt)
	if err != nil {
		return nil, err
	}
	return newMemCorpus(sel, meta), nil
}
