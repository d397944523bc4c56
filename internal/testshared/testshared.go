// Package testshared locates the project's shared test data: the real
// trace corpus and tokenizers in ../shared next to the module root. It is
// for tests only; a test that needs the data skips with a clear message
// when it is absent (a user's fresh clone), and runs in CI, where it is
// present.
package testshared

import (
	"os"
	"path/filepath"
	"testing"
)

// Path returns the absolute path of ../shared/<rel> next to the module
// root (the directory holding go.mod above the working directory). It
// skips tb when the module root or the entry cannot be found.
func Path(tb testing.TB, rel string) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Skip("module root (go.mod) not found above the working directory; shared test data unavailable")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", rel)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared test data %s is absent (%v): these tests need ../shared next to the module, as CI has it", p, err)
	}
	return p
}

// SkipIfShort skips tb under `go test -short`, the README's quick test
// command, with a message that names the switch and what the test costs
// (why, e.g. "runs three sweep points against the simulator"). CI's
// .ci/run runs without -short, so every such test still runs there.
func SkipIfShort(tb testing.TB, why string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("long test skipped under -short (%s); run without -short, as .ci/run does, to include it", why)
	}
}
