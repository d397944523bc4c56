package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/agentperf/agentperf/internal/hfhub"
	"github.com/agentperf/agentperf/internal/hfhub/hubtest"
	"github.com/agentperf/agentperf/internal/testshared"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
)

const (
	e2eDataset = "semianalysisai/cc-traces-weka-062126"
	e2eAlias   = "semianalysis_cc_traces_weka_062126"
	e2eModel   = "Qwen/Qwen3-0.6B"
	e2eCommit  = "5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e"
	e2eModelC  = "c0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ff"
)

func unzstd(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out, err := d.DecodeAll(b, nil)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return out
}

// sharedHub serves the real 200-trace corpus as the traces.jsonl of the
// InferenceX default dataset and a real Qwen3 tokenizer.json (with its
// tokenizer_config.json and a weights file that must not be fetched) as
// e2eModel, from ../shared.
func sharedHub(t *testing.T) *hubtest.Hub {
	t.Helper()
	traces := unzstd(t, testshared.Path(t, "traces/kvct-200.jsonl.zst"))
	tokJSON := unzstd(t, testshared.Path(t, "tokenizers/qwen3.tokenizer.json.zst"))
	tokCfg, err := os.ReadFile(testshared.Path(t, "tokenizers/qwen3.tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	h := hubtest.New()
	t.Cleanup(h.Close)
	h.Add(&hubtest.Repo{Kind: hfhub.KindDataset, ID: e2eDataset,
		Commits: map[string]map[string]hubtest.File{e2eCommit: {"traces.jsonl": {Data: traces, LFS: true}, "README.md": {Data: []byte("---\nconfigs: []\n---\n")}}},
		Refs:    map[string]string{"main": e2eCommit}})
	h.Add(&hubtest.Repo{Kind: hfhub.KindModel, ID: e2eModel,
		Commits: map[string]map[string]hubtest.File{e2eModelC: {"tokenizer.json": {Data: tokJSON, Xet: true}, "tokenizer_config.json": {Data: tokCfg}, "model.safetensors": {Data: []byte("weights"), LFS: true}}},
		Refs:    map[string]string{"main": e2eModelC}})
	return h
}

// hubEnv points the process at the fake hub with an empty cache.
func hubEnv(t *testing.T, h *hubtest.Hub) string {
	t.Helper()
	clearAIPerfEnv(t)
	cache := filepath.Join(t.TempDir(), "hf-hub-cache")
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "0")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", filepath.Join(t.TempDir(), "no-token"))
	return cache
}

// TestProfileDownloadsCorpusAndTokenizer is the fresh-node run: the
// InferenceX command line (no --tokenizer) on an empty hub cache
// downloads the corpus and the model's tokenizer (not its weights), says
// so, and sends prompts with exactly the trace's token counts under that
// tokenizer; a second run, offline, needs no network.
func TestProfileDownloadsCorpusAndTokenizer(t *testing.T) {
	testshared.SkipIfShort(t, "downloads a corpus and a tokenizer from a fake hub and runs")
	h := sharedHub(t)
	cache := hubEnv(t, h)
	out := filepath.Join(t.TempDir(), "artifacts")
	args := []string{"profile", "--url", "sim://?zero-latency=true", "--public-dataset", e2eAlias, "--model", e2eModel,
		"--concurrency", "2", "--benchmark-duration", "3", "--streaming", "--use-server-token-count",
		"--max-context-length", "16384", "--num-dataset-entries", "6", "--random-seed", "7",
		"--ui-type", "none", "--no-plot", "--output-artifact-dir", out}
	// A run that never ends fails this test, not the whole package's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	code, stdout, stderr := runProfileCLI(ctx, t, args...)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, w := range []string{"hub: traces.jsonl: downloading", "hub: tokenizer.json: downloading", "Xet",
		"tokenizer: " + e2eModel + "@main (commit " + e2eModelC + "), downloaded tokenizer.json, tokenizer_config.json (no --tokenizer, so the tokenizer of --model " + e2eModel + ")",
		"from " + e2eDataset + "@main (commit " + e2eCommit + ")"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not say %q:\n%s", w, stderr)
		}
	}
	if !strings.Contains(stdout, "tokenizer: "+e2eModel+"@main (commit "+e2eModelC+")") {
		t.Errorf("the summary does not name the tokenizer:\n%s", stdout)
	}
	if n := h.Count("", "model.safetensors"); n != 0 {
		t.Errorf("the model's weights were fetched (%d requests)", n)
	}
	agg := checkArtifacts(t, out)
	md := agg["metadata"].(map[string]any)
	ap, _ := md["agentperf"].(map[string]any)
	tm, _ := ap["tokenizer"].(map[string]any)
	if tm["source"] != "hub" || tm["hf_model"] != e2eModel || tm["hf_revision"] != "main" || tm["hf_commit"] != e2eModelC || tm["approximate"] != false {
		t.Errorf("metadata.agentperf.tokenizer = %v", tm)
	}
	if ds, _ := md["dataset"].(map[string]any); ds["hf_dataset_name"] != e2eDataset || ds["hf_commit"] != e2eCommit {
		t.Errorf("metadata.dataset = %v", ds)
	}

	// Exact token counts: each request's prompt_tokens (warmup and
	// profiling), as the simulator counted them with the downloaded
	// tokenizer, is the sum of its messages' tokens — each built to the
	// trace's recorded counts — plus the chat template.
	snap, _, _, err := hfhub.Snapshot(cache, hfhub.KindModel, e2eModel, "main")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.LoadHF(filepath.Join(snap, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_HUB_OFFLINE", "1") // everything needed is cached now
	checked := 0
	for _, rec := range readRecords(t, filepath.Join(out, "profile_export.jsonl")) {
		meta := rec["metadata"].(map[string]any)
		if rec["error"] != nil || checked == 4 {
			continue
		}
		isl := num(rec, "metrics", "input_sequence_length", "value")
		var so, se bytes.Buffer
		showArgs := []string{"dataset", "show", "--public-dataset", e2eAlias, "--max-context-length", "16384", "--num-dataset-entries", "6",
			"--tokenizer", e2eModel, "--random-seed", "7", "--trace", meta["conversation_id"].(string), "--turn", strconv.Itoa(int(meta["turn_index"].(float64)))}
		if c := runMain(context.Background(), showArgs, &so, &se); c != exitOK {
			t.Fatalf("dataset show: exit %d: %s", c, se.String())
		}
		var rep prompttext.TurnReport
		if err := json.Unmarshal(so.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		if !rep.Exact || rep.BuiltTokens != rep.RecordedIn || rep.TokenizerApproximate {
			t.Errorf("%s turn %d: built %d tokens for a recorded %d (exact %v)", rep.Trace, rep.Turn, rep.BuiltTokens, rep.RecordedIn, rep.Exact)
		}
		want := len(tok.Encode("<|im_start|>assistant\n"))
		for _, m := range rep.Messages {
			want += m.Tokens + len(tok.Encode("<|im_start|>"+m.Role+"\n")) + len(tok.Encode("<|im_end|>\n"))
		}
		if int(isl) != want {
			t.Errorf("%s turn %d: the server counted %v prompt tokens; the trace's %d plus the template make %d", rep.Trace, rep.Turn, isl, rep.BuiltTokens, want)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no record to check")
	}
	t.Logf("first run, stderr:\n%s\nstdout:\n%s\n%d requests checked for exact token counts", stderr, stdout, checked)

	// Warm and offline: no request at all.
	h.Reset()
	code, stdout, stderr = runProfileCLI(ctx, t, append(args[:len(args)-1], filepath.Join(t.TempDir(), "again"))...)
	if code != exitOK || len(h.Requests()) != 0 {
		t.Fatalf("offline rerun: exit %d, %d requests\n%s\n%s", code, len(h.Requests()), stdout, stderr)
	}
	if strings.Contains(stderr, "downloading") {
		t.Errorf("offline rerun downloaded:\n%s", stderr)
	}
}

// TestProfileTokenizerDefault: builtin only by name or for the simulator
// with a model name that is no hub id; otherwise --model is the tokenizer,
// and a failure says what was tried.
func TestProfileTokenizerDefault(t *testing.T) {
	clearAIPerfEnv(t)
	srv := startSim(t, "served-model")
	base := func(url, model string, extra ...string) []string {
		return append([]string{"profile", "--url", url, "--public-dataset", "synthetic:traces=3", "--model", model,
			"--concurrency", "1", "--benchmark-duration", "1",
			"--ui-type", "none", "--no-plot", "--output-artifact-dir", t.TempDir()}, extra...)
	}
	code, stdout, stderr := runProfileCLI(context.Background(), t, base("sim://?zero-latency=true", "demo")...)
	if code != exitOK || !strings.Contains(stderr, "not a Hugging Face model id): the builtin tokenizer") || !strings.Contains(stdout, "tokenizer: builtin") {
		t.Fatalf("sim:// with demo: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, _, stderr = runProfileCLI(context.Background(), t, base(srv.URL, "served-model")...)
	if code != exitUsage || !strings.Contains(stderr, "no --tokenizer, so the tokenizer of --model served-model") || !strings.Contains(stderr, "--tokenizer builtin") {
		t.Fatalf("real server, model name no hub id: exit %d\n%s", code, stderr)
	}
	// A hub id is looked up even for the simulator; offline and uncached it fails and says why.
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HF_HUB_OFFLINE", "1")
	code, _, stderr = runProfileCLI(context.Background(), t, base("sim://?zero-latency=true", "org/model")...)
	if code != exitUsage || !strings.Contains(stderr, "HF_HUB_OFFLINE") || !strings.Contains(stderr, "agentperf tokenizer download org/model") {
		t.Fatalf("uncached hub id offline: exit %d\n%s", code, stderr)
	}
	code, _, stderr = runProfileCLI(context.Background(), t, base(srv.URL, "served-model", "--tokenizer", "builtin", "--tokenizer-revision", "v2")...)
	if code != exitUsage || !strings.Contains(stderr, "--tokenizer-revision v2") {
		t.Fatalf("--tokenizer-revision with builtin: exit %d\n%s", code, stderr)
	}
}

// TestDownloadCommands: `dataset download` and `tokenizer download` fill
// the cache ahead of a run, say what they did, verify on a second run,
// and fail with what to do (no token for a gated model, offline).
func TestDownloadCommands(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	traces := []byte(`{"id":"a","requests":[]}` + "\n")
	h.Add(&hubtest.Repo{Kind: hfhub.KindDataset, ID: e2eDataset,
		Commits: map[string]map[string]hubtest.File{e2eCommit: {"traces.jsonl": {Data: traces, LFS: true}}}, Refs: map[string]string{"main": e2eCommit}})
	tj, err := os.ReadFile("../../text/tokenizer/testdata/tiny.tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	h.Add(&hubtest.Repo{Kind: hfhub.KindModel, ID: "meta-llama/Tiny", Token: "hf_granted",
		Commits: map[string]map[string]hubtest.File{e2eModelC: {"tokenizer.json": {Data: tj, LFS: true}, "tokenizer_config.json": {Data: []byte(`{}`)}}}, Refs: map[string]string{"main": e2eModelC}})
	cache := hubEnv(t, h)
	secrets := []string{"hf_granted", "hf_wrongSECRET"}
	cli := func(args ...string) (int, string, string) {
		var o, e bytes.Buffer
		c := runMain(context.Background(), args, &o, &e)
		for _, s := range secrets {
			if strings.Contains(o.String()+e.String(), s) {
				t.Errorf("%v printed the token %s…", args, s[:5])
			}
		}
		return c, o.String(), e.String()
	}
	code, out, errOut := cli("dataset", "download", e2eAlias)
	if code != exitOK || !strings.Contains(out, "dataset "+e2eDataset+"@main: commit "+e2eCommit) || !strings.Contains(out, "traces.jsonl  25 B  downloaded") || !strings.Contains(errOut, "hub: traces.jsonl") {
		t.Fatalf("dataset download: exit %d\n%s\n%s", code, out, errOut)
	}
	h.Reset()
	code, out, _ = cli("dataset", "download", e2eDataset+"@main")
	if code != exitOK || !strings.Contains(out, "in the cache, verified") || len(h.Requests()) != 1 {
		t.Fatalf("second dataset download: exit %d, %d requests\n%s", code, len(h.Requests()), out)
	}
	code, _, errOut = cli("tokenizer", "download", "meta-llama/Tiny")
	if code != exitUsage || !strings.Contains(errOut, "no token was sent") || !strings.Contains(errOut, "HF_TOKEN") {
		t.Fatalf("gated tokenizer without a token: exit %d\n%s", code, errOut)
	}
	t.Setenv("HF_TOKEN", "hf_wrongSECRET")
	code, _, errOut = cli("tokenizer", "download", "meta-llama/Tiny")
	if code != exitUsage || !strings.Contains(errOut, "403") || !strings.Contains(errOut, "the token from HF_TOKEN was not accepted") {
		t.Fatalf("gated tokenizer with a refused token: exit %d\n%s", code, errOut)
	}
	t.Setenv("HF_TOKEN", "hf_granted")
	code, out, errOut = cli("tokenizer", "download", "meta-llama/Tiny")
	if code != exitOK || !strings.Contains(out, "tokenizer meta-llama/Tiny@main: commit "+e2eModelC) || !strings.Contains(out, "tokenizer_config.json") || !strings.Contains(out, "loads: meta-llama/Tiny encodes") {
		t.Fatalf("tokenizer download: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Setenv("HF_HUB_OFFLINE", "1")
	code, _, errOut = cli("dataset", "download", "semianalysis_cc_traces_weka_062126_256k")
	if code != exitUsage || !strings.Contains(errOut, "HF_HUB_OFFLINE") || !strings.Contains(errOut, "agentperf dataset download semianalysisai/cc-traces-weka-062126-256k") {
		t.Fatalf("offline, not cached: exit %d\n%s", code, errOut)
	}
	if code, out, _ = cli("dataset", "download", e2eAlias); code != exitOK || !strings.Contains(out, "in the cache, verified") {
		t.Fatalf("offline, cached: exit %d\n%s", code, out)
	}
	for _, bad := range [][]string{{"dataset", "download"}, {"dataset", "download", "synthetic"}, {"dataset", "download", "no_such_alias"}, {"tokenizer", "download", "not-an-id"}, {"tokenizer"}, {"dataset", "download", e2eDataset + "@v1", "--revision", "v2"}} {
		if code, _, _ := cli(bad...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", bad, code, exitUsage)
		}
	}
	// The token never reaches the cache.
	filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			for _, s := range secrets {
				if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(s)) {
					t.Errorf("%s holds a token", p)
				}
			}
		}
		return nil
	})
	if h.CDNAuthHeaders() != 0 {
		t.Error("the token went to the CDN")
	}
}
