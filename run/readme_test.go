package run_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeGoBlock returns the first ```go block after the heading in
// README.md at the repository's root.
func readmeGoBlock(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatalf("read README.md: %v", err)
	}
	s := string(b)
	i := strings.Index(s, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README.md has no %q section", heading)
	}
	s = s[i:]
	const open = "\n```go\n"
	j := strings.Index(s, open)
	if next := strings.Index(s[1:], "\n## "); j < 0 || (next >= 0 && j > next+1) {
		t.Fatalf("README.md's %q section has no ```go block", heading)
	}
	s = s[j+len(open):]
	k := strings.Index(s, "\n```")
	if k < 0 {
		t.Fatalf("README.md's %q go block is not closed", heading)
	}
	return s[:k+1]
}

// TestReadmeSnippetBuilds builds the README's library snippet as a user
// would: a module of its own that depends on this clone through a
// replace directive (what the README says to do until the module is
// published) and the requirements `go mod tidy` would give it, with
// nothing fetched from the network (GOPROXY=off: the dependencies come
// from the module cache this repository's build filled).
func TestReadmeSnippetBuilds(t *testing.T) {
	src := readmeGoBlock(t, "## As a library")
	for _, want := range []string{"package main", "Streaming = true", "run.Run(ctx, s)"} {
		if !strings.Contains(src, want) {
			t.Errorf("the README snippet lacks %q:\n%s", want, src)
		}
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The requirements `go mod tidy` gives such a module: the clone and
	// what the clone requires (its go.mod's require blocks).
	ownMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := string(ownMod)
	if i := strings.Index(reqs, "\nrequire"); i >= 0 {
		reqs = reqs[i:]
	} else {
		reqs = ""
	}
	gomod := "module example.com/harness\n\ngo 1.26.0\n\nrequire github.com/agentperf/agentperf v0.0.0\n" + reqs +
		"\nreplace github.com/agentperf/agentperf => " + root + "\n"
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(src)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", filepath.Join(dir, "harness"), ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOWORK=off", "GOFLAGS=-buildvcs=false")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's library snippet does not build as a module depending on this clone (go build: %v):\n%s\n--- main.go\n%s", err, out.String(), src)
	}
}
