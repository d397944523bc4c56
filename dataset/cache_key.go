package dataset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// cacheLoaderVersion names the behaviour of ReadPath and Select that a
// cache file captures. Bump it whenever they change what they return for the
// same input (a parsing rule, a default, the selection order): every cache
// key changes with it, so stale entries are never looked up again.
const cacheLoaderVersion = 1

// cacheExt is the file name extension of cache files.
const cacheExt = ".dscache"

// cacheKeyDoc is the canonical document a cache key hashes. encoding/json
// writes struct fields in declaration order, so the encoding is canonical.
type cacheKeyDoc struct {
	Format           uint32 `json:"format"`
	Loader           int    `json:"loader"`
	Source           string `json:"source"`
	SkipInvalid      bool   `json:"skip_invalid"`
	MaxContextLength int    `json:"max_context_length"`
	MaxOSL           int    `json:"max_osl"`
	NumEntries       int    `json:"num_entries"`
}

// cacheKey returns the 32-hex-digit key for a source content identity
// ("sha256:<hex>" for local files and directories, "hf:<repo>@<commit>:<file>"
// for hub snapshots) and the options that change what is loaded.
func cacheKey(source string, read ReadOptions, sel SelectOptions) string {
	d := cacheKeyDoc{
		Format: CacheFormatVersion, Loader: cacheLoaderVersion, Source: source,
		SkipInvalid: read.SkipInvalid, MaxContextLength: sel.MaxContextLength, NumEntries: sel.NumEntries,
	}
	// MaxOSL only matters through the context filter.
	if sel.MaxContextLength > 0 {
		d.MaxOSL = sel.MaxOSL
	}
	b, err := json.Marshal(d)
	if err != nil {
		panic(err) // cannot happen: plain struct
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// sourceIndexEntry is one record of the stat-keyed index that maps a local
// file or directory, as it is now on disk, to the SHA-256 of its content.
type sourceIndexEntry struct {
	Path   string           `json:"path"`
	Dir    bool             `json:"dir"`
	Stamps []namedFileStamp `json:"stamps"`
	SHA256 string           `json:"sha256"`
}

type namedFileStamp struct {
	Name  string    `json:"name,omitempty"`
	Stamp fileStamp `json:"stamp"`
}

// sourceStamps stats a file, or every regular file of a directory, without
// reading content.
func sourceStamps(path string, fi os.FileInfo) ([]namedFileStamp, error) {
	if !fi.IsDir() {
		return []namedFileStamp{{Stamp: stampOf(fi)}}, nil
	}
	des, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []namedFileStamp
	for _, de := range des {
		if de.IsDir() {
			continue
		}
		fi, err := os.Stat(filepath.Join(path, de.Name()))
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		out = append(out, namedFileStamp{Name: de.Name(), Stamp: stampOf(fi)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func stampsEqual(a, b []namedFileStamp) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] || a[i].Stamp.Ino == 0 {
			return false
		}
	}
	return true
}

// hashFile returns the hex SHA-256 of the file at path, streamed.
func hashFile(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("hash %s: %w", path, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashSource returns the content SHA-256 of a file, or of a directory: the
// SHA-256 of the lines "<name>\x00<sha256 of the file>\n" over its regular
// files in name order.
func hashSource(ctx context.Context, path string, stamps []namedFileStamp, dir bool) (string, error) {
	if !dir {
		return hashFile(ctx, path)
	}
	h := sha256.New()
	for _, s := range stamps {
		sum, err := hashFile(ctx, filepath.Join(path, s.Name))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%s\n", s.Name, sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// indexPath returns where the stat index keeps its record for abs.
func indexPath(cacheDir, abs string) string {
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(cacheDir, "sources", hex.EncodeToString(sum[:16])+".json")
}

// sourceSHA256 returns the content SHA-256 of the local file or directory
// abs. When the stat index in cacheDir holds a record whose stats match the
// source as it is now, it returns the recorded hash without reading the
// source; otherwise it hashes the source once and records the result
// (hashed reports which happened). A failure to record is returned as
// indexErr and is not fatal.
func sourceSHA256(ctx context.Context, cacheDir, abs string, fi os.FileInfo) (sum string, hashed bool, indexErr, err error) {
	stamps, err := sourceStamps(abs, fi)
	if err != nil {
		return "", false, nil, fmt.Errorf("read %s: %w", abs, err)
	}
	ip := indexPath(cacheDir, abs)
	if b, rerr := os.ReadFile(ip); rerr == nil {
		var e sourceIndexEntry
		if json.Unmarshal(b, &e) == nil && e.Path == abs && e.Dir == fi.IsDir() && stampsEqual(e.Stamps, stamps) && len(e.SHA256) == 64 {
			return e.SHA256, false, nil, nil
		}
	}
	sum, err = hashSource(ctx, abs, stamps, fi.IsDir())
	if err != nil {
		return "", false, nil, err
	}
	// Re-stat: a source modified while it was hashed must not be recorded
	// under the new stats with the old content.
	after, serr := sourceStamps(abs, fi)
	if serr != nil || !stampsEqual(after, stamps) {
		return sum, true, fmt.Errorf("%s changed while it was hashed; not recording its hash", abs), nil
	}
	b, _ := json.Marshal(sourceIndexEntry{Path: abs, Dir: fi.IsDir(), Stamps: stamps, SHA256: sum})
	if merr := os.MkdirAll(filepath.Dir(ip), 0o755); merr != nil {
		return sum, true, merr, nil
	}
	if werr := writeFileAtomic(ip, b); werr != nil {
		return sum, true, werr, nil
	}
	return sum, true, nil, nil
}

// hfBlobSHA256 returns the SHA-256 that names the hub blob a snapshot file
// links to, or "" when the blob name is not one (small files stored in git
// are named by their git SHA-1).
func hfBlobSHA256(path string) string {
	target, err := os.Readlink(path)
	if err != nil {
		return ""
	}
	name := filepath.Base(target)
	if len(name) != 64 || strings.Trim(name, "0123456789abcdef") != "" {
		return ""
	}
	return name
}
