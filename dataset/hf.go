package dataset

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentperf/agentperf/internal/suggest"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentperf/agentperf/internal/hfhub"
)

// HFRef names a file in a Hugging Face dataset repository.
type HFRef struct {
	// Repo is "org/name", e.g. "semianalysisai/cc-traces-weka-062126".
	Repo string
	// Revision is a branch, tag or 40-hex commit; "" means "main".
	Revision string
	// File is the path inside the repository; "" means "traces.jsonl".
	File string
}

// DefaultHFFile is the corpus file inside a weka HF dataset.
const DefaultHFFile = "traces.jsonl"

// Rev returns the revision r names: Revision, or "main" when it is
// empty.
func (r HFRef) Rev() string {
	if r.Revision == "" {
		return "main"
	}
	return r.Revision
}

func (r HFRef) file() string {
	if r.File == "" {
		return DefaultHFFile
	}
	return r.File
}

// String formats r as "org/name@revision:file" (revision and file only when
// set).
func (r HFRef) String() string {
	s := r.Repo
	if r.Revision != "" {
		s += "@" + r.Revision
	}
	if r.File != "" {
		s += ":" + r.File
	}
	return s
}

// ErrLocalAlias is returned by ResolveAlias for the weka_trace loader,
// which reads a local directory rather than an HF dataset.
var ErrLocalAlias = errors.New("the weka_trace loader reads local trace files: set Source.InputFile to them")

// publicDatasets maps --public-dataset aliases to HF dataset repositories
// (the aliases of InferenceX HEAD's launcher, docs/weka-traces.md; the alias
// semianalysis_cc_traces_weka follows newer aiperf; weka_hf is the generic HF
// loader that the AgentX scenario pins to the 062126 corpus).
var publicDatasets = map[string]string{
	"semianalysis_cc_traces_weka":                            "semianalysisai/cc-traces-weka-no-subagents-051826",
	"semianalysis_cc_traces_weka_with_subagents":             "semianalysisai/cc-traces-weka-061526",
	"semianalysis_cc_traces_weka_with_subagents_256k":        "semianalysisai/cc-traces-weka-061526-256k",
	"semianalysis_cc_traces_weka_with_subagents_060226":      "semianalysisai/cc-traces-weka-with-subagents-060226",
	"semianalysis_cc_traces_weka_with_subagents_060226_256k": "semianalysisai/cc-traces-weka-with-subagents-060226-256k",
	"semianalysis_cc_traces_weka_with_subagents_060526":      "semianalysisai/cc-traces-weka-with-subagents-060526",
	"semianalysis_cc_traces_weka_with_subagents_060526_256k": "semianalysisai/cc-traces-weka-with-subagents-060526-256k",
	"semianalysis_cc_traces_weka_with_subagents_060826":      "semianalysisai/cc-traces-weka-with-subagents-060826",
	"semianalysis_cc_traces_weka_with_subagents_060826_256k": "semianalysisai/cc-traces-weka-with-subagents-060826-256k",
	"semianalysis_cc_traces_weka_061326":                     "semianalysisai/cc-traces-weka-061326",
	"semianalysis_cc_traces_weka_061326_256k":                "semianalysisai/cc-traces-weka-061326-256k",
	"semianalysis_cc_traces_weka_061526":                     "semianalysisai/cc-traces-weka-061526",
	"semianalysis_cc_traces_weka_061526_256k":                "semianalysisai/cc-traces-weka-061526-256k",
	"semianalysis_cc_traces_weka_062126":                     "semianalysisai/cc-traces-weka-062126",
	"semianalysis_cc_traces_weka_062126_256k":                "semianalysisai/cc-traces-weka-062126-256k",
	"weka_hf": "semianalysisai/cc-traces-weka-062126",
}

// aliasHistory lists, per alias, the repositories it named in earlier
// InferenceX versions, newest first (docs/weka-traces.md): v0.2
// downloaded cc-traces-weka-no-subagents-051226 for the
// plain alias, v0.3 cc-traces-weka-with-subagents-052726[-256k] for the
// with_subagents aliases. A cache prepared by those versions holds only
// the older repository, so resolution falls back to them in this fixed
// order; the repository actually used is recorded in the run metadata.
var aliasHistory = map[string][]string{
	"semianalysis_cc_traces_weka":                     {"semianalysisai/cc-traces-weka-no-subagents-051226"},
	"semianalysis_cc_traces_weka_with_subagents":      {"semianalysisai/cc-traces-weka-with-subagents-052726"},
	"semianalysis_cc_traces_weka_with_subagents_256k": {"semianalysisai/cc-traces-weka-with-subagents-052726-256k"},
}

// AliasCandidates returns the HF datasets a --public-dataset alias may
// resolve to, in the order they are tried: the current mapping
// (ResolveAlias), then the repositories the alias named in earlier
// InferenceX versions. It is never "the newest of anything that matches":
// the list is fixed and the first one present in the hub cache wins.
func AliasCandidates(alias string) ([]HFRef, error) {
	ref, err := ResolveAlias(alias)
	if err != nil {
		return nil, err
	}
	out := []HFRef{ref}
	for _, repo := range aliasHistory[alias] {
		out = append(out, HFRef{Repo: repo})
	}
	return out, nil
}

// ResolveAliasHF resolves alias to the first of its AliasCandidates present
// in the hub cache. When none is, the error of the current mapping (paths
// tried and the download command) is returned, with the older repositories
// that were also tried.
func ResolveAliasHF(alias string, getenv func(string) string) (ref HFRef, path, commit string, err error) {
	cands, err := AliasCandidates(alias)
	if err != nil {
		return HFRef{}, "", "", err
	}
	var first error
	for _, c := range cands {
		p, cm, rerr := ResolveHF(c, getenv)
		if rerr == nil {
			return c, p, cm, nil
		}
		if first == nil {
			first = rerr
		}
	}
	if len(cands) > 1 {
		older := make([]string, 0, len(cands)-1)
		for _, c := range cands[1:] {
			older = append(older, c.Repo)
		}
		return HFRef{}, "", "", fmt.Errorf("%w\n(also tried the repositories this alias named in earlier InferenceX versions: %s)", first, strings.Join(older, ", "))
	}
	return HFRef{}, "", "", first
}

// FetchAliasHF is ResolveAliasHF that downloads the alias's current
// repository (the first of its AliasCandidates) with hub when none of the
// candidates is in the hub cache. A cached candidate is used without any
// network access. With a nil hub it is ResolveAliasHF.
func FetchAliasHF(ctx context.Context, alias string, getenv func(string) string, hub *hfhub.Client) (ref HFRef, path, commit string, err error) {
	ref, path, commit, err = ResolveAliasHF(alias, getenv)
	if err == nil || hub == nil {
		return ref, path, commit, err
	}
	cands, cerr := AliasCandidates(alias)
	if cerr != nil {
		return HFRef{}, "", "", cerr
	}
	path, commit, err = download(ctx, cands[0], hub)
	if err != nil {
		return HFRef{}, "", "", &FieldError{Field: "Source.PublicDataset", Err: fmt.Errorf("%s (HF dataset %s): %w", alias, cands[0].Repo, err)}
	}
	return cands[0], path, commit, nil
}

// PublicDatasetAliases returns the known --public-dataset aliases that map
// to HF datasets, sorted.
func PublicDatasetAliases() []string {
	out := make([]string, 0, len(publicDatasets))
	for a := range publicDatasets {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// ResolveAlias maps a --public-dataset alias to its HF dataset (revision
// main, file traces.jsonl). Besides the aliases listed by
// PublicDatasetAliases it accepts "weka_hf:org/name[@revision]" for any
// repository. "weka_trace" returns ErrLocalAlias; "synthetic" is not an HF
// dataset and is handled by the caller. An unknown alias is an error that
// lists the known ones.
func ResolveAlias(alias string) (HFRef, error) {
	if repo, ok := publicDatasets[alias]; ok {
		return HFRef{Repo: repo}, nil
	}
	if rest, ok := strings.CutPrefix(alias, "weka_hf:"); ok {
		return ParseHFDataset(rest)
	}
	if alias == "weka_trace" || strings.HasPrefix(alias, "weka_trace:") {
		return HFRef{}, ErrLocalAlias
	}
	return HFRef{}, fmt.Errorf("unknown public dataset %q%s; known: %s, weka_hf:ORG/NAME[@REV], weka_trace (local, with Source.InputFile), synthetic",
		alias, suggest.DidYouMean(alias, append(PublicDatasetAliases(), "weka_trace", "synthetic")), strings.Join(PublicDatasetAliases(), ", "))
}

// ParseDownloadName parses the name of a corpus on the hub: an HF dataset
// "org/name[@revision]" (ParseHFDataset) or a public alias (ResolveAlias).
func ParseDownloadName(name string) (HFRef, error) {
	if strings.Contains(name, "/") && !strings.Contains(name, ":") {
		return ParseHFDataset(name)
	}
	return ResolveAlias(name)
}

// ParseHFDataset parses "org/name[@revision]" (the --hf-dataset flag).
func ParseHFDataset(s string) (HFRef, error) {
	repo, rev, hasRev := strings.Cut(s, "@")
	org, name, ok := strings.Cut(repo, "/")
	bad := func(why string) (HFRef, error) {
		return HFRef{}, fmt.Errorf("invalid HF dataset %q: %s (expected org/name or org/name@revision, e.g. semianalysisai/cc-traces-weka-062126@main)", s, why)
	}
	switch {
	case !ok || org == "" || name == "":
		return bad("missing org or name")
	case !validRepoPart(org) || !validRepoPart(name):
		return bad("org and name may only hold letters, digits, '-', '_' and '.'")
	case hasRev && (rev == "" || strings.Contains(rev, "..") || strings.HasPrefix(rev, "/") || strings.ContainsAny(rev, "\\ \t\n")):
		return bad("empty or unsafe revision")
	}
	return HFRef{Repo: org + "/" + name, Revision: rev}, nil
}

func validRepoPart(s string) bool {
	if s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return false
		}
	}
	return true
}

// HubCacheDir returns the Hugging Face hub cache directory the way the hf
// CLI and InferenceX find it: HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE,
// else $HF_HOME/hub, else ~/.cache/huggingface/hub (with HOME from getenv).
func HubCacheDir(getenv func(string) string) string { return hfhub.CacheDir(getenv) }

// ResolveHF finds ref's file in the local hub cache and returns its path
// and the commit it belongs to. The layout is the hf CLI's:
// <cache>/datasets--<org>--<name>/refs/<revision> holds the commit, and
// the file is <cache>/datasets--<org>--<name>/snapshots/<commit>/<file>. A
// 40-hex revision is used as the commit directly. It resolves exactly the
// requested revision, never "the newest snapshot" (which read the wrong
// corpus from InferenceX's shared caches).
// When the file is not there the error names every path tried and the
// hf download command that fetches it.
func ResolveHF(ref HFRef, getenv func(string) string) (path string, commit string, err error) {
	if _, perr := ParseHFDataset(ref.Repo); perr != nil || strings.Contains(ref.Repo, "@") {
		return "", "", fmt.Errorf("resolve HF dataset: invalid repo %q (expected org/name)", ref.Repo)
	}
	if ref.Revision != "" {
		if _, perr := ParseHFDataset(ref.Repo + "@" + ref.Revision); perr != nil {
			return "", "", fmt.Errorf("resolve HF dataset: %w", perr)
		}
	}
	file := ref.file()
	if strings.Contains(file, "..") || filepath.IsAbs(file) {
		return "", "", fmt.Errorf("resolve HF dataset: unsafe file name %q", file)
	}
	root := HubCacheDir(getenv)
	var tried []string
	fetch := fmt.Sprintf("HF_HUB_CACHE=%s hf download --repo-type dataset %s --revision %s %s\nor:\n  HF_HUB_CACHE=%s agentperf dataset download %s@%s", root, ref.Repo, ref.Rev(), file, root, ref.Repo, ref.Rev())
	notFound := func(why string) (string, string, error) {
		return "", "", fmt.Errorf("HF dataset %s@%s is not in the hub cache (%s); tried:\n  %s\nfetch it with:\n  %s",
			ref.Repo, ref.Rev(), why, strings.Join(tried, "\n  "), fetch)
	}
	snap, commit, tried, err := hfhub.Snapshot(root, hfhub.KindDataset, ref.Repo, ref.Rev())
	if errors.Is(err, hfhub.ErrNotCached) {
		return notFound(fmt.Sprintf("no ref %q", ref.Rev()))
	}
	if err != nil {
		return "", "", fmt.Errorf("resolve HF dataset %s: %w; re-run: %s", ref.Repo, err, fetch)
	}
	path = filepath.Join(snap, filepath.FromSlash(file))
	tried = append(tried, path)
	if fi, serr := os.Stat(path); serr != nil || fi.IsDir() {
		return notFound(fmt.Sprintf("no %s in snapshot %s", file, commit))
	}
	return path, commit, nil
}

// FetchHF is ResolveHF that downloads ref's file with hub when the hub
// cache lacks it: the revision is resolved to its commit on the hub, the
// file is fetched and verified into the cache (see internal/hfhub), and
// the ref is recorded, so the next run finds it without any network
// access. A file already in the cache is used as it is, without a
// request. With a nil hub it is ResolveHF.
func FetchHF(ctx context.Context, ref HFRef, getenv func(string) string, hub *hfhub.Client) (path, commit string, err error) {
	path, commit, err = ResolveHF(ref, getenv)
	if err == nil || hub == nil {
		return path, commit, err
	}
	if _, perr := ParseHFDataset(ref.Repo); perr != nil {
		return "", "", err // invalid input: the cache error says so
	}
	return download(ctx, ref, hub)
}

// DownloadHF fetches ref's file into the hub cache with hub, asking the
// hub what the revision names now (a moved branch is followed) and
// verifying the cached file against its checksum; it is what `agentperf
// dataset download` runs. An offline hub client checks the cache only.
func DownloadHF(ctx context.Context, ref HFRef, hub *hfhub.Client) (*hfhub.Result, error) {
	if _, err := ParseHFDataset(ref.Repo + "@" + ref.Rev()); err != nil {
		return nil, err
	}
	return hub.Download(ctx, hfhub.Request{Kind: hfhub.KindDataset, Repo: ref.Repo, Revision: ref.Rev(), Files: []string{ref.file()}, Refresh: true, Verify: true})
}

func download(ctx context.Context, ref HFRef, hub *hfhub.Client) (path, commit string, err error) {
	res, err := hub.Download(ctx, hfhub.Request{Kind: hfhub.KindDataset, Repo: ref.Repo, Revision: ref.Rev(), Files: []string{ref.file()}})
	if err != nil {
		return "", "", err
	}
	return res.Files[0].Path, res.Commit, nil
}
