package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/internal/hfhub"
)

func init() {
	registerDataset(command{name: "download", summary: "download a corpus into the Hugging Face hub cache ahead of a run (ALIAS or ORG/NAME[@REV])", run: runDatasetDownload})
}

const datasetDownloadExamples = `  # the InferenceX default corpus, into the hub cache (HF_HUB_CACHE, else ~/.cache/huggingface/hub)
  agentperf dataset download semianalysis_cc_traces_weka_062126

  # once per cluster, into the shared cache the nodes mount; the runs then need no network
  HF_HUB_CACHE=/shared/hf-hub-cache agentperf dataset download semianalysis_cc_traces_weka_062126
  HF_HUB_CACHE=/shared/hf-hub-cache HF_HUB_OFFLINE=1 agentperf profile --public-dataset semianalysis_cc_traces_weka_062126 ...

  # an HF dataset by name, at a tag or commit
  agentperf dataset download semianalysisai/cc-traces-weka-062126@main

It asks the hub what the revision names now, downloads what the cache lacks (resuming a cut
download), and verifies every file against the hub's checksum, downloading a damaged one again.
A gated or private dataset needs a token: HF_TOKEN, or the file HF_TOKEN_PATH
(default $HF_HOME/token, written by 'hf auth login').`

func runDatasetDownload(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("dataset download", "dataset download ALIAS|ORG/NAME[@REV] [flags]", datasetDownloadExamples, io.out)
	rev := fs.String("revision", "", "branch, tag or commit (default: the @REV of the name, else main)")
	file := fs.String("file", dataset.DefaultHFFile, "the corpus file inside the repository")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("dataset download: want one ALIAS or ORG/NAME[@REV] (see 'agentperf dataset download --help')")
	}
	name := fs.Arg(0)
	if _, ok, _ := dataset.ParseSynthetic(name); ok {
		return usagef("dataset download: %s is generated in memory; there is nothing to download", name)
	}
	ref, err := dataset.ParseDownloadName(name)
	if err != nil {
		return asUsage(err)
	}
	if fs.Changed("revision") {
		if ref.Revision != "" && ref.Revision != *rev {
			return usagef("dataset download: %s names revision %s and --revision says %s: give one", name, ref.Revision, *rev)
		}
		ref.Revision = *rev
	}
	ref.File = *file
	hub, err := newHub(os.Getenv, io, nil)
	if err != nil {
		return err
	}
	res, err := dataset.DownloadHF(ctx, ref, hub)
	if err != nil {
		if ctx.Err() == nil {
			err = asUsage(hfhub.DownloadAdvice(err, "dataset download "+name, hub.CacheDir(), os.Getenv("HF_ENDPOINT"),
				"or do without it: give profile a local copy of the traces file with --input-file FILE"))
		}
		return err
	}
	fmt.Fprintf(io.out, "dataset %s@%s: commit %s\n", ref.Repo, ref.Rev(), res.Commit)
	res.WriteFiles(io.out)
	fmt.Fprintf(io.out, "hub cache: %s\n", hub.CacheDir())
	return nil
}
