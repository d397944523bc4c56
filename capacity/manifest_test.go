package capacity

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/internal/codectest"
)

// FuzzManifestRoundTrip: the sweep's points survive EncodeManifest →
// DecodeManifest, and the bytes are a fixed point.
func FuzzManifestRoundTrip(f *testing.F) {
	f.Add(3, "ok", "")
	f.Add(64, "failed", "exit 1: \"quoted\" <&> é")
	f.Fuzz(func(t *testing.T, c int, status, msg string) {
		status, msg = strings.ToValidUTF8(status, ""), strings.ToValidUTF8(msg, "") // encoding/json replaces invalid bytes
		pts := []PointRecord{{Concurrency: c, Dir: PointDir(c), Status: status, Message: msg}, {Concurrency: c + 1, Dir: PointDir(c + 1), Status: PointOK}}
		if back, _ := codectest.RoundTrip(t, pts, EncodeManifest, DecodeManifest); !reflect.DeepEqual(back, pts) {
			t.Fatalf("decoded %+v, want %+v", back, pts)
		}
	})
}

// FuzzDecodeManifest: any bytes either decode or give an error, never a
// panic; what decodes encodes to a fixed point.
func FuzzDecodeManifest(f *testing.F) {
	f.Add([]byte(`{"points":[{"concurrency":4,"dir":"c4","status":"ok"}]}`))
	f.Add([]byte(`{"points":null,"other":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		codectest.FixedPoint(t, b, DecodeManifest, EncodeManifest)
	})
}

// TestReadManifestNamesTheFile: a malformed manifest names the file, the
// field and what to do.
func TestReadManifestNamesTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"points":[{"concurrency":"four"}]}`), 0o644)
	_, err := ReadManifest(dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, ManifestFile)) || !strings.Contains(err.Error(), "points.concurrency") ||
		!strings.Contains(err.Error(), "delete it") {
		t.Errorf("ReadManifest: %v", err)
	}
}
