package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/internal/hfhub"
	"github.com/agentperf/agentperf/run"
)

// Environment variables of the dataset cache.
const (
	envCacheDir     = dataset.EnvCacheDir
	envCacheEnabled = dataset.EnvCacheEnabled
)

// weka is aiperf's generic HF weka loader, which --public-dataset may name.
const weka = "weka_hf"

// datasetFlags are the corpus flags shared by profile, dataset info/show
// and dataset cache: where the corpus comes from, how it is selected, and
// the dataset cache.
type datasetFlags struct {
	inputFile     string
	publicDataset string
	hfDataset     string
	customType    string
	maxContext    int
	maxOSL        int
	numEntries    int
	skipInvalid   bool
	cacheDirFlag  string
	noCache       bool

	// getenv reads the environment; tests replace it.
	getenv func(string) string
}

// addDatasetFlags registers the corpus flags on fs.
func addDatasetFlags(fs *pflag.FlagSet) *datasetFlags {
	d := &datasetFlags{getenv: os.Getenv}
	fs.StringVar(&d.inputFile, "input-file", "", "a local corpus: a .jsonl/.json file (optionally .zst or .gz) or a directory of one-trace .json files")
	fs.StringVar(&d.publicDataset, "public-dataset", "", "a public dataset alias read from the HF hub cache, downloaded into it when missing (e.g. semianalysis_cc_traces_weka_062126), or synthetic[:seed=N,traces=M,subagents=true] for a generated corpus")
	fs.StringVar(&d.hfDataset, "hf-dataset", "", "an HF dataset ORG/NAME[@REVISION], read from the hub cache, downloaded into it when missing")
	fs.StringVar(&d.hfDataset, "hf-weka-dataset", "", "alias of --hf-dataset (aiperf's weka_hf loader; --public-dataset weka_hf with it is accepted)")
	fs.StringVar(&d.customType, "custom-dataset-type", "", "format of --input-file; only weka_trace is supported")
	fs.IntVar(&d.maxContext, "max-context-length", 0, "drop whole traces whose peak input+output exceeds this many tokens (0 = keep all)")
	fs.IntVar(&d.maxOSL, "synthesis-max-osl", 0, "cap the output tokens of parent requests (also when computing a trace's peak for --max-context-length; 0 = no cap)")
	fs.IntVar(&d.numEntries, "num-dataset-entries", 0, "keep at most the first N eligible traces, in source order (a ceiling; 0 = all)")
	fs.BoolVar(&d.skipInvalid, "skip-invalid-traces", false, "skip malformed traces (counted and reported) instead of failing on the first")
	fs.StringVar(&d.cacheDirFlag, "dataset-cache-dir", "", "directory of the content-addressed dataset cache (default $"+envCacheDir+", else <user cache dir>/agentperf/dataset)")
	fs.BoolVar(&d.noCache, "no-dataset-cache", false, "read the corpus without the dataset cache (also: "+envCacheEnabled+"=false)")
	return d
}

// source returns the dataset source the flags name, checking the flag
// combinations.
func (d *datasetFlags) source() (dataset.Source, error) {
	switch d.customType {
	case "", "weka_trace":
	default:
		return dataset.Source{}, usagef("--custom-dataset-type %s is not supported: agentperf reads only weka_trace corpora", d.customType)
	}
	if d.customType != "" && d.inputFile == "" {
		return dataset.Source{}, usagef("--custom-dataset-type %s needs --input-file", d.customType)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"--max-context-length", d.maxContext}, {"--synthesis-max-osl", d.maxOSL}, {"--num-dataset-entries", d.numEntries}} {
		if f.v < 0 {
			return dataset.Source{}, usagef("%s %d: must be 0 (no limit) or positive", f.name, f.v)
		}
	}
	public := d.publicDataset
	if public == weka && d.hfDataset != "" {
		// aiperf's generic HF weka loader, the repo from --hf-weka-dataset
		// (alone, weka_hf is the alias of the 062126 corpus).
		public = ""
	}
	src := dataset.Source{InputFile: d.inputFile, PublicDataset: public, HFDataset: d.hfDataset}
	if src == (dataset.Source{}) {
		return src, usagef("no dataset given: pass --input-file PATH, --public-dataset ALIAS (e.g. synthetic) or --hf-dataset ORG/NAME[@REV]")
	}
	return src, nil
}

// cacheSettings returns the cache directory ("" = the default) and
// whether the cache is on, from the flags and the environment. The flags
// win: --no-dataset-cache turns it off, an explicit --dataset-cache-dir on.
func (d *datasetFlags) cacheSettings() (dir string, enabled bool, err error) {
	dir, enabled, err = dataset.CacheFromEnv(d.getenv)
	switch {
	case err != nil:
		return "", false, asUsage(err)
	case d.noCache:
		return "", false, nil
	case d.cacheDirFlag != "":
		// An explicit directory on the command line turns the cache on.
		return d.cacheDirFlag, true, nil
	}
	return dir, enabled, nil
}

// cacheDir returns the dataset cache directory, or "" when the cache is
// off. Other on-disk caches (the tokenized prompt corpus) live beside it.
func (d *datasetFlags) cacheDir() string {
	dir, on, err := d.cacheSettings()
	if err != nil || !on {
		return ""
	}
	if dir == "" {
		dir, _ = dataset.DefaultCacheDir() // "" (no cache) when there is none
	}
	return dir
}

// synthesisMaxOSL returns --synthesis-max-osl (0 = no cap).
func (d *datasetFlags) synthesisMaxOSL() int { return d.maxOSL }

// options returns the dataset.Options the flags and environment describe,
// with warnings going to w.
func (d *datasetFlags) options(io stdio) (dataset.Options, error) {
	dir, on, err := d.cacheSettings()
	if err != nil {
		return dataset.Options{}, err
	}
	getenv := d.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var hub *hfhub.Client
	if (dataset.Source{InputFile: d.inputFile, PublicDataset: d.publicDataset, HFDataset: d.hfDataset}).FromHub() {
		if hub, err = newHub(getenv, io, nil); err != nil {
			return dataset.Options{}, err
		}
	}
	return dataset.Options{
		Hub:          hub,
		Read:         dataset.ReadOptions{SkipInvalid: d.skipInvalid},
		Select:       dataset.SelectOptions{MaxContextLength: d.maxContext, MaxOSL: d.maxOSL, NumEntries: d.numEntries},
		CacheDir:     dir,
		CacheEnabled: on,
		Getenv:       getenv,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(io.err, "dataset: %s\n", flagNames(fmt.Sprintf(format, args...)))
		},
	}, nil
}

// open opens the corpus the flags name, printing what was loaded and how
// (cache hit or miss, with timing) to io.err. Problems with the input are
// usage errors (exit code 2); cache problems are warnings.
func (d *datasetFlags) open(ctx context.Context, io stdio) (*dataset.Corpus, error) {
	src, err := d.source()
	if err != nil {
		return nil, err
	}
	opt, err := d.options(io)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	c, err := dataset.Open(ctx, src, opt)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("open dataset: %w", err)
		}
		return nil, asUsage(err)
	}
	run.DescribeLoaded(io.err, c, opt, time.Since(t0))
	return c, nil
}

// errNoCache reports a cache subcommand run with the cache turned off.
var errNoCache = errors.New("the dataset cache is off (--no-dataset-cache or " + envCacheEnabled + "=false)")
