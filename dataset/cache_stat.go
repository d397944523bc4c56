package dataset

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// fileStamp identifies one version of a file without reading it: size,
// modification and change times, inode and device. A write to the file
// changes its mtime and ctime; replacing it changes the inode. User space
// can reset mtime but not ctime.
type fileStamp struct {
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtime_ns"`
	CtimeNs int64  `json:"ctime_ns"`
	Ino     uint64 `json:"ino"`
	Dev     uint64 `json:"dev"`
}

func stampOf(fi os.FileInfo) fileStamp {
	s := fileStamp{Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano()}
	sysStamp(fi, &s)
	return s
}

// verifiedMarker is the JSON written next to a cache file once it has been
// written or completely verified.
type verifiedMarker struct {
	Version uint32    `json:"version"`
	Stamp   fileStamp `json:"stamp"`
}

func markerPath(cachePath string) string { return cachePath + ".ok" }

// verifiedMarkerMatches reports whether the marker next to path records
// exactly the file whose stat is fi.
func verifiedMarkerMatches(path string, fi os.FileInfo) bool {
	b, err := os.ReadFile(markerPath(path))
	if err != nil {
		return false
	}
	var m verifiedMarker
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	return m.Version == CacheFormatVersion && m.Stamp == stampOf(fi) && m.Stamp.Ino != 0
}

// markerMargin is how long a file must have been unchanged before a marker
// may vouch for it. File times come from a coarse clock (up to a scheduler
// tick behind); a write made after a marker was written can carry the same
// ctime as the marked file only if that ctime is within a tick of the
// marker, so younger files are never marked.
const markerMargin = 50 * time.Millisecond

// writeVerifiedMarker records the file at path as verified, if its stat is
// still before (the stat taken before verification) and it is older than
// markerMargin. The marker is replaced atomically; it is not fsynced,
// because losing it only costs a full verification.
func writeVerifiedMarker(path string, before fileStamp, now time.Time) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	st := stampOf(fi)
	if st != before || st.Ino == 0 || now.Sub(time.Unix(0, st.CtimeNs)) < markerMargin {
		return nil
	}
	b, err := json.Marshal(verifiedMarker{Version: CacheFormatVersion, Stamp: st})
	if err != nil {
		return err
	}
	return writeFileAtomic(markerPath(path), b)
}

// writeFileAtomic writes a small file via a temporary file and a rename.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
