package main

import (
	"context"
	"time"

	"github.com/agentperf/agentperf/dataset"
)

const datasetCachePruneExamples = `  # what removing the cache files unused for 30 days would free (nothing is removed)
  agentperf dataset cache prune --unused-for-days 30 --dry-run

  # keep the 5 most recently used cache files, remove the others
  agentperf dataset cache prune --keep-newest 5

  # both: of the files outside the newest 5, those unused for 7 days
  agentperf dataset cache prune --keep-newest 5 --unused-for-days 7 --dataset-cache-dir /aiperf_mmap_cache`

// runCachePrune is 'dataset cache prune': dataset.Prune over the cache
// directory the other actions use.
func runCachePrune(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("dataset cache prune", "dataset cache prune (--unused-for-days N | --keep-newest K) [--dry-run] [--dataset-cache-dir DIR]", datasetCachePruneExamples, io.out)
	days := fs.Float64("unused-for-days", 0, "remove the cache files not used for N days (last use: the later of the file's access and modification times; where the file system does not record accesses, when it was built)")
	keep := fs.Int("keep-newest", -1, "keep the K most recently used cache files (with --unused-for-days, a floor: only files outside them that are also unused for N days go; -1: no count rule)")
	dry := fs.Bool("dry-run", false, "say what would be removed and freed, remove nothing")
	var c dataset.Choice
	fs.StringVar(&c.CacheDir, "dataset-cache-dir", "", "directory of the content-addressed dataset cache (default $"+envCacheDir+", else <user cache dir>/agentperf/dataset)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("dataset cache prune: unexpected argument %q (it prunes the whole cache directory: choose files with --unused-for-days and --keep-newest)", fs.Arg(0))
	}
	if *days < 0 || !fs.Changed("unused-for-days") && !fs.Changed("keep-newest") {
		usageTo(fs, io.err)
		return usagef("dataset cache prune: give --unused-for-days N (N ≥ 0), --keep-newest K, or both")
	}
	if fs.Changed("keep-newest") && *keep < 0 {
		return usagef("dataset cache prune: --keep-newest %d: want 0 or more", *keep)
	}
	if fs.Changed("unused-for-days") && *days == 0 && !fs.Changed("keep-newest") {
		return usagef("dataset cache prune: --unused-for-days 0 would remove every cache file: say so with --keep-newest 0")
	}
	dir, _, err := c.Cache(nil)
	if err != nil {
		return asUsage(err)
	}
	opt := dataset.PruneOptions{Dir: dir, OlderThan: time.Duration(*days * float64(24*time.Hour)), Keep: *keep, DryRun: *dry}
	res, err := dataset.Prune(ctx, opt)
	if err != nil {
		return err
	}
	res.WriteText(io.out, *dry)
	return nil
}
