package selfprofile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStart: the CPU and heap profiles are written when stopped; a pprof
// address that is not loopback is refused.
func TestStart(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	stop, err := Start(Options{CPUProfile: cpu, MemProfile: mem, PprofAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	for _, f := range []string{cpu, mem} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v (size %v): want a profile", f, err, st)
		}
	}
	if _, err := Start(Options{PprofAddr: "0.0.0.0:6060"}); err == nil || !strings.Contains(err.Error(), "must be a loopback host:port") {
		t.Errorf("pprof on 0.0.0.0: error %v, want a refusal", err)
	}
}
