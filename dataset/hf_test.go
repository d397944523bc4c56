package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func envFrom(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestHubCacheDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HF_HUB_CACHE": "/a", "HUGGINGFACE_HUB_CACHE": "/b", "HF_HOME": "/c", "HOME": "/h"}, "/a"},
		{map[string]string{"HUGGINGFACE_HUB_CACHE": "/b", "HF_HOME": "/c", "HOME": "/h"}, "/b"},
		{map[string]string{"HF_HOME": "/c", "HOME": "/h"}, "/c/hub"},
		{map[string]string{"HOME": "/h"}, "/h/.cache/huggingface/hub"},
	} {
		if got := HubCacheDir(envFrom(tc.env)); got != tc.want {
			t.Errorf("HubCacheDir(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

func TestResolveAlias(t *testing.T) {
	t.Parallel()
	for alias, repo := range map[string]string{
		"semianalysis_cc_traces_weka_062126":                     "semianalysisai/cc-traces-weka-062126",
		"semianalysis_cc_traces_weka_062126_256k":                "semianalysisai/cc-traces-weka-062126-256k",
		"semianalysis_cc_traces_weka_with_subagents":             "semianalysisai/cc-traces-weka-061526",
		"semianalysis_cc_traces_weka_with_subagents_256k":        "semianalysisai/cc-traces-weka-061526-256k",
		"semianalysis_cc_traces_weka_with_subagents_060826_256k": "semianalysisai/cc-traces-weka-with-subagents-060826-256k",
		"semianalysis_cc_traces_weka_061326":                     "semianalysisai/cc-traces-weka-061326",
		"weka_hf":                                                "semianalysisai/cc-traces-weka-062126",
	} {
		ref, err := ResolveAlias(alias)
		if err != nil || ref.Repo != repo || ref.Revision != "" {
			t.Errorf("ResolveAlias(%q) = %+v, %v; want %s", alias, ref, err, repo)
		}
	}
	// the 14 InferenceX aliases (7 corpora × full/_256k) are all known
	n := 0
	for _, a := range PublicDatasetAliases() {
		if strings.HasPrefix(a, "semianalysis_cc_traces_weka_") {
			n++
		}
	}
	if n != 14 {
		t.Errorf("%d InferenceX aliases, want 14", n)
	}
	if ref, err := ResolveAlias("weka_hf:org/name@v1"); err != nil || ref.Repo != "org/name" || ref.Revision != "v1" {
		t.Errorf("weka_hf:org/name@v1 → %+v, %v", ref, err)
	}
	if _, err := ResolveAlias("weka_trace"); !errors.Is(err, ErrLocalAlias) {
		t.Errorf("weka_trace → %v, want ErrLocalAlias", err)
	}
	_, err := ResolveAlias("semianalysis_cc_traces_weka_999999")
	if err == nil || !strings.Contains(err.Error(), "semianalysis_cc_traces_weka_062126_256k") || !strings.Contains(err.Error(), "synthetic") {
		t.Errorf("unknown alias error %v does not list the known aliases", err)
	}
}

func TestParseHFDataset(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want HFRef
		err  bool
	}{
		{"org/name", HFRef{Repo: "org/name"}, false},
		{"semianalysisai/cc-traces-weka-062126@0123456789abcdef0123456789abcdef01234567", HFRef{Repo: "semianalysisai/cc-traces-weka-062126", Revision: "0123456789abcdef0123456789abcdef01234567"}, false},
		{"org/name@refs/pr/1", HFRef{Repo: "org/name", Revision: "refs/pr/1"}, false},
		{"name", HFRef{}, true},
		{"/name", HFRef{}, true},
		{"org/", HFRef{}, true},
		{"org/na me", HFRef{}, true},
		{"org/name@", HFRef{}, true},
		{"org/name@../../etc", HFRef{}, true},
		{"../x", HFRef{}, true},
	} {
		got, err := ParseHFDataset(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseHFDataset(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

func TestResolveHF(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	env := envFrom(map[string]string{"HF_HUB_CACHE": root})
	repo := filepath.Join(root, "datasets--org--name")
	mainSHA := strings.Repeat("a", 40)
	oldSHA := strings.Repeat("b", 40)
	for _, sha := range []string{mainSHA, oldSHA} {
		os.MkdirAll(filepath.Join(repo, "snapshots", sha), 0o755)
		os.WriteFile(filepath.Join(repo, "snapshots", sha, "traces.jsonl"), []byte(sha), 0o644)
	}
	os.MkdirAll(filepath.Join(repo, "refs"), 0o755)
	os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(mainSHA+"\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "refs", "bad"), []byte("nonsense"), 0o644)
	// a newer snapshot of a different weka dataset must never be picked
	other := filepath.Join(root, "datasets--org--name-256k", "snapshots", strings.Repeat("c", 40))
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "traces.jsonl"), []byte("x"), 0o644)

	path, commit, err := ResolveHF(HFRef{Repo: "org/name"}, env)
	if err != nil || commit != mainSHA || path != filepath.Join(repo, "snapshots", mainSHA, "traces.jsonl") {
		t.Errorf("main: %s %s %v", path, commit, err)
	}
	path, commit, err = ResolveHF(HFRef{Repo: "org/name", Revision: oldSHA}, env)
	if err != nil || commit != oldSHA || !strings.Contains(path, oldSHA) {
		t.Errorf("commit revision: %s %s %v", path, commit, err)
	}

	_, _, err = ResolveHF(HFRef{Repo: "org/name", Revision: "v2"}, env)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(repo, "refs", "v2")) || !strings.Contains(err.Error(), "hf download --repo-type dataset org/name --revision v2 traces.jsonl") {
		t.Errorf("missing ref error %v must name the ref path and the hf download command", err)
	}
	_, _, err = ResolveHF(HFRef{Repo: "org/name", File: "other.jsonl"}, env)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(repo, "refs", "main")) || !strings.Contains(err.Error(), filepath.Join(repo, "snapshots", mainSHA, "other.jsonl")) {
		t.Errorf("missing file error %v must name every path tried", err)
	}
	_, _, err = ResolveHF(HFRef{Repo: "org/absent"}, env)
	if err == nil || !strings.Contains(err.Error(), "datasets--org--absent") || !strings.Contains(err.Error(), "HF_HUB_CACHE="+root) {
		t.Errorf("absent dataset error %v", err)
	}
	if _, _, err = ResolveHF(HFRef{Repo: "org/name", Revision: "bad"}, env); err == nil || !strings.Contains(err.Error(), "not a 40-hex commit") {
		t.Errorf("damaged ref error %v", err)
	}
	if _, _, err = ResolveHF(HFRef{Repo: "org/name", File: "../../x"}, env); err == nil {
		t.Error("unsafe file name accepted")
	}
}

func TestParseDownloadName(t *testing.T) {
	t.Parallel()
	if r, err := ParseDownloadName("org/name@v2"); err != nil || r.Repo != "org/name" || r.Revision != "v2" {
		t.Errorf("org/name@v2: %+v %v", r, err)
	}
	if r, err := ParseDownloadName("weka_hf:org/other"); err != nil || r.Repo != "org/other" {
		t.Errorf("weka_hf:org/other: %+v %v", r, err)
	}
	alias := PublicDatasetAliases()[0]
	want, _ := ResolveAlias(alias)
	if r, err := ParseDownloadName(alias); err != nil || r != want {
		t.Errorf("%s: %+v %v", alias, r, err)
	}
	if _, err := ParseDownloadName("no_such_alias"); err == nil {
		t.Error("an unknown alias parsed")
	}
}
