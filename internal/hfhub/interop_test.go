package hfhub

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pythonHub returns a Python interpreter that can import huggingface_hub
// ($AGENTPERF_TEST_PYTHON, else python3), or skips: CI does not depend on
// Python; where it is installed these tests check the interop for real.
func pythonHub(t *testing.T) string {
	t.Helper()
	py := os.Getenv("AGENTPERF_TEST_PYTHON")
	if py == "" {
		var err error
		if py, err = exec.LookPath("python3"); err != nil {
			t.Skip("no python3 (set AGENTPERF_TEST_PYTHON to a Python with huggingface_hub)")
		}
	}
	if out, err := exec.Command(py, "-c", "import huggingface_hub").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import huggingface_hub (set AGENTPERF_TEST_PYTHON to a Python that can): %v %s", py, err, bytes.TrimSpace(out))
	}
	return py
}

const pyDownload = `
import sys
from huggingface_hub import hf_hub_download
for f in sys.argv[2:]:
    print(hf_hub_download(repo_id=sys.argv[1], filename=f, repo_type="dataset", revision="main"))
`

func runPython(t *testing.T, py string, env []string, args ...string) []string {
	t.Helper()
	cmd := exec.Command(py, append([]string{"-c", pyDownload}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("python: %v\n%s\n%s", err, out, stderr)
	}
	return strings.Fields(string(out))
}

// TestInteropPythonFillsAgentperfReads: huggingface_hub downloads from the
// fake hub into a cache; agentperf's client then finds everything and
// sends no request.
func TestInteropPythonFillsAgentperfReads(t *testing.T) {
	py := pythonHub(t)
	h, data := testHub(t)
	cache := t.TempDir()
	paths := runPython(t, py, []string{"HF_ENDPOINT=" + h.URL, "HF_HUB_CACHE=" + cache, "HF_HUB_OFFLINE=0", "HF_TOKEN=", "HF_HUB_DISABLE_TELEMETRY=1"}, testRepo, "traces.jsonl", "README.md")
	if len(paths) != 2 || !bytes.Equal(readPtr(t, paths[0]), data) {
		t.Fatalf("python downloaded %v", paths)
	}
	h.Reset()
	c, _ := newTestClient(t, h.URL, cache)
	r := dsReq("traces.jsonl", "README.md")
	r.Verify = true // the checksums agentperf expects are the ones huggingface_hub named the blobs by
	res, err := c.Download(context.Background(), r)
	if err != nil || !res.FromCache || len(h.Requests()) != 0 {
		t.Fatalf("%+v %v; requests %v", res, err, h.Requests())
	}
	if res.Files[0].Path != paths[0] {
		t.Errorf("agentperf path %s, python path %s", res.Files[0].Path, paths[0])
	}
}

// TestInteropAgentperfFillsPythonReads: agentperf's client fills a cache;
// huggingface_hub, offline, finds the files there.
func TestInteropAgentperfFillsPythonReads(t *testing.T) {
	py := pythonHub(t)
	h, data := testHub(t)
	cache := t.TempDir()
	c, _ := newTestClient(t, h.URL, cache)
	if _, err := c.Download(context.Background(), dsReq("traces.jsonl", "README.md")); err != nil {
		t.Fatal(err)
	}
	paths := runPython(t, py, []string{"HF_ENDPOINT=" + h.URL, "HF_HUB_CACHE=" + cache, "HF_HUB_OFFLINE=1"}, testRepo, "traces.jsonl", "README.md")
	if len(paths) != 2 || !bytes.Equal(readPtr(t, paths[0]), data) || filepath.Base(paths[1]) != "README.md" {
		t.Fatalf("python read %v", paths)
	}
}
