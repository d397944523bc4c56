package main

import (
	"context"
	"fmt"
	"time"

	"github.com/agentperf/agentperf/internal/suggest"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/run"
)

func init() {
	registerDataset(command{name: "cache", summary: "build, verify, locate or prune the mmap'd dataset cache files", run: runDatasetCache})
}

const datasetCacheExamples = `  # build the cache for the InferenceX default corpus ahead of a run (prints path, size, time)
  agentperf dataset cache build --public-dataset semianalysis_cc_traces_weka_062126 --num-dataset-entries 393

  # where a corpus's cache file is (the key covers content, selection flags and format version)
  agentperf dataset cache locate --input-file traces.jsonl.zst --max-context-length 131072

  # check every checksum of the cache file of a corpus, or of cache files given by path (exit 1 if corrupt)
  agentperf dataset cache verify --input-file traces.jsonl.zst
  agentperf dataset cache verify ~/.cache/agentperf/dataset/*.dscache

  # remove the cache files unused for 30 days (--dry-run first says what it would free)
  agentperf dataset cache prune --unused-for-days 30

  # a shared cache directory (also: AIPERF_DATASET_MMAP_CACHE_DIR)
  agentperf dataset cache build --input-file ./traces/ --dataset-cache-dir /aiperf_mmap_cache`

var datasetCacheActions = map[string]func(ctx context.Context, d *datasetFlags, files []string, io stdio) error{
	"build":  cacheBuild,
	"verify": cacheVerify,
	"locate": cacheLocate,
}

func runDatasetCache(ctx context.Context, args []string, io stdio) error {
	if len(args) > 0 && args[0] == "prune" {
		return runCachePrune(ctx, args[1:], io)
	}
	fs := newFlagSet("dataset cache", "dataset cache (build | verify | locate) (--input-file PATH | --public-dataset ALIAS | --hf-dataset ORG/NAME[@REV]) [flags]\n  agentperf dataset cache verify CACHE_FILE...\n  agentperf dataset cache prune (--unused-for-days N | --keep-newest K) [--dry-run] (see 'dataset cache prune --help')", datasetCacheExamples, io.out)
	d := addDatasetFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		usageTo(fs, io.err)
		return usagef("dataset cache: an action is required: build, verify, locate or prune")
	}
	action, ok := datasetCacheActions[fs.Arg(0)]
	if !ok {
		return usagef("dataset cache: unknown action %q%s (want build, verify, locate or prune)", fs.Arg(0), suggest.DidYouMean(fs.Arg(0), []string{"build", "verify", "locate", "prune"}))
	}
	files := fs.Args()[1:]
	if len(files) > 0 && fs.Arg(0) != "verify" {
		return usagef("dataset cache %s: unexpected argument %q (name the corpus with --input-file, --public-dataset or --hf-dataset)", fs.Arg(0), files[0])
	}
	return action(ctx, d, files, io)
}

// cacheOptions returns the options for a cache action, which needs the
// cache on and a corpus that has a cache file.
func cacheOptions(d *datasetFlags, io stdio) (dataset.Source, dataset.Options, error) {
	src, err := d.source()
	if err != nil {
		return src, dataset.Options{}, err
	}
	opt, err := d.options(io)
	switch {
	case err != nil:
		return src, opt, err
	case !opt.CacheEnabled:
		return src, opt, asUsage(errNoCache)
	}
	return src, opt, asUsage(src.Cacheable())
}

func cacheBuild(ctx context.Context, d *datasetFlags, _ []string, io stdio) error {
	src, opt, err := cacheOptions(d, io)
	if err != nil {
		return err
	}
	t0 := time.Now()
	c, err := dataset.Open(ctx, src, opt)
	if err != nil {
		return inputError(ctx, err)
	}
	defer c.Close()
	took := time.Since(t0)
	run.DescribeLoaded(io.err, c, opt, took)
	if c.CachePath() == "" {
		fmt.Fprintln(io.err, "dataset cache build: the cache file could not be written (see the warning above)")
		return errRunFailed
	}
	if err := c.WriteCacheText(io.out, took); err != nil {
		return fmt.Errorf("dataset cache build: %w", err)
	}
	return nil
}

func cacheVerify(ctx context.Context, d *datasetFlags, files []string, io stdio) error {
	if len(files) == 0 {
		loc, err := cacheLocation(ctx, d, io)
		if err != nil {
			return err
		}
		if !loc.Exists {
			fmt.Fprintf(io.err, "dataset cache verify: no cache file for this corpus at %s (build it with 'agentperf dataset cache build' and the same flags)\n", loc.Path)
			return errRunFailed
		}
		files = []string{loc.Path}
	}
	bad := dataset.VerifyCaches(io.out, files)
	if bad > 0 {
		fmt.Fprintf(io.err, "dataset cache verify: %d of %d files failed; a run rebuilds a bad file automatically, or delete it\n", bad, len(files))
		return errRunFailed
	}
	return nil
}

func cacheLocate(ctx context.Context, d *datasetFlags, _ []string, io stdio) error {
	loc, err := cacheLocation(ctx, d, io)
	if err != nil {
		return err
	}
	loc.WriteText(io.out)
	return nil
}

// cacheLocation is where the cache file of the corpus the flags name is.
func cacheLocation(ctx context.Context, d *datasetFlags, io stdio) (dataset.Location, error) {
	src, opt, err := cacheOptions(d, io)
	if err != nil {
		return dataset.Location{}, err
	}
	loc, err := dataset.Locate(ctx, src, opt)
	if err != nil {
		return loc, inputError(ctx, err)
	}
	return loc, nil
}
