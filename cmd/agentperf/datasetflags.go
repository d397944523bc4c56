package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/run"
)

// Environment variables of the dataset cache.
const envCacheDir, envCacheEnabled = dataset.EnvCacheDir, dataset.EnvCacheEnabled

// datasetFlags are the corpus flags shared by profile, dataset info/show
// and dataset cache: where the corpus comes from, how it is selected and
// the dataset cache (a dataset.Choice), and --custom-dataset-type.
type datasetFlags struct {
	choice     dataset.Choice
	customType string

	// getenv reads the environment; tests replace it.
	getenv func(string) string
}

// addDatasetFlags registers the corpus flags on fs.
func addDatasetFlags(fs *pflag.FlagSet) *datasetFlags {
	d := &datasetFlags{getenv: os.Getenv}
	fs.StringVar(&d.choice.InputFile, "input-file", "", "a local corpus: a .jsonl/.json file (optionally .zst or .gz) or a directory of one-trace .json files")
	fs.StringVar(&d.choice.PublicDataset, "public-dataset", "", "a public dataset alias read from the HF hub cache, downloaded into it when missing (e.g. semianalysis_cc_traces_weka_062126), or synthetic[:seed=N,traces=M,subagents=true] for a generated corpus")
	fs.StringVar(&d.choice.HFDataset, "hf-dataset", "", "an HF dataset ORG/NAME[@REVISION], read from the hub cache, downloaded into it when missing")
	fs.StringVar(&d.choice.HFDataset, "hf-weka-dataset", "", "alias of --hf-dataset (aiperf's weka_hf loader; --public-dataset weka_hf with it is accepted)")
	fs.StringVar(&d.customType, "custom-dataset-type", "", "format of --input-file; only weka_trace is supported")
	fs.IntVar(&d.choice.Select.MaxContextLength, "max-context-length", 0, "drop whole traces whose peak input+output exceeds this many tokens (0 = keep all)")
	fs.IntVar(&d.choice.Select.MaxOSL, "synthesis-max-osl", 0, "cap the output tokens of parent requests (also when computing a trace's peak for --max-context-length; 0 = no cap)")
	fs.IntVar(&d.choice.Select.NumEntries, "num-dataset-entries", 0, "keep at most the first N eligible traces, in source order (a ceiling; 0 = all)")
	fs.BoolVar(&d.choice.Read.SkipInvalid, "skip-invalid-traces", false, "skip malformed traces (counted and reported) instead of failing on the first")
	fs.StringVar(&d.choice.CacheDir, "dataset-cache-dir", "", "directory of the content-addressed dataset cache (default $"+envCacheDir+", else <user cache dir>/agentperf/dataset)")
	fs.BoolVar(&d.choice.NoCache, "no-dataset-cache", false, "read the corpus without the dataset cache (also: "+envCacheEnabled+"=false)")
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
	if d.customType != "" && d.choice.InputFile == "" {
		return dataset.Source{}, usagef("--custom-dataset-type %s needs --input-file", d.customType)
	}
	src, err := d.choice.Source()
	return src, asUsage(err)
}

// cacheDir returns the dataset cache directory, or "" when the cache is
// off. Other on-disk caches (the tokenized prompt corpus) live beside it.
func (d *datasetFlags) cacheDir() string { return d.choice.ActiveCacheDir(d.getenv) }

// synthesisMaxOSL returns --synthesis-max-osl (0 = no cap).
func (d *datasetFlags) synthesisMaxOSL() int { return d.choice.Select.MaxOSL }

// options returns the dataset.Options the flags and environment describe,
// with warnings going to io.err.
func (d *datasetFlags) options(io stdio) (dataset.Options, error) {
	opt, err := d.choice.Options(d.getenv)
	if err != nil {
		return opt, asUsage(err)
	}
	if d.choice.FromHub() {
		if opt.Hub, err = newHub(opt.Getenv, io, nil); err != nil {
			return dataset.Options{}, err
		}
	}
	opt.Logf = func(format string, args ...any) {
		fmt.Fprintf(io.err, "dataset: %s\n", flagNames(fmt.Sprintf(format, args...)))
	}
	return opt, nil
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

// inputError is err, an error of the input, as a usage error (exit code
// 2), unless ctx ended (an interrupted download or read).
func inputError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	return asUsage(err)
}

// errNoCache reports a cache subcommand run with the cache turned off.
var errNoCache = errors.New("the dataset cache is off (--no-dataset-cache or " + envCacheEnabled + "=false)")
