package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// PruneOptions say which dataset cache files Prune removes. A file is
// removed when every rule given says so: with OlderThan alone, the files
// not used for that long; with Keep alone, all but the Keep most recently
// used; with both, the files outside the newest Keep that are also older
// than OlderThan (Keep is a floor). At least one rule must be given.
type PruneOptions struct {
	// Dir is the cache directory ("": DefaultCacheDir).
	Dir string
	// OlderThan removes files whose last use is at least this long ago
	// (0: no age rule).
	OlderThan time.Duration
	// Keep keeps the Keep most recently used files (< 0: no count rule).
	Keep int
	// DryRun removes nothing: the result says what would be removed.
	DryRun bool
	// Now is the clock (zero: time.Now).
	Now time.Time
}

// PrunedFile is a cache file Prune removed (or would remove).
type PrunedFile struct {
	Path string
	// Bytes is the cache file's size and its verified marker's.
	Bytes int64
	// LastUsed is the later of the file's access and modification times.
	LastUsed time.Time

	mod  time.Time // the modification time and size when listed
	size int64
}

// PruneResult says what Prune did.
type PruneResult struct {
	Dir     string
	Removed []PrunedFile
	// Kept counts the cache files left; Busy lists those left because a
	// builder held their lock.
	Kept int
	Busy []string
	// Freed is the bytes of the removed files.
	Freed int64
}

// Prune removes dataset cache files (*.dscache and their .ok markers) of
// the cache directory by last use: the later of the file's access and
// modification times (a warm open maps the file, which the kernel counts
// as an access; on a file system mounted noatime, or where access times
// are not read, last use is when the file was built). Each file is
// removed under its key's lock (the one a builder holds while it writes):
// a file being built is skipped (PruneResult.Busy), never waited for. A
// run that has the file mapped keeps reading it: removing a mapped file
// frees its space only when the run unmaps it. Other files in the
// directory (the source index, the prompt synthesizer's corpora) are left
// alone.
func Prune(ctx context.Context, opt PruneOptions) (PruneResult, error) {
	if opt.OlderThan <= 0 && opt.Keep < 0 {
		return PruneResult{}, &FieldError{Field: "PruneOptions", Err: errors.New("no rule: give OlderThan, Keep or both")}
	}
	if opt.OlderThan < 0 {
		return PruneResult{}, &FieldError{Field: "PruneOptions.OlderThan", Err: fmt.Errorf("%v is negative", opt.OlderThan)}
	}
	dir := opt.Dir
	if dir == "" {
		var err error
		if dir, err = DefaultCacheDir(); err != nil {
			return PruneResult{}, err
		}
	}
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	res := PruneResult{Dir: dir}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return res, fmt.Errorf("prune dataset cache: %w", err)
	}
	var files []PrunedFile
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), cacheExt) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Stat(p)
		if err != nil {
			continue // removed meanwhile
		}
		used := fi.ModTime()
		if at := accessTime(fi); at.After(used) {
			used = at
		}
		n := fi.Size()
		if m, err := os.Stat(markerPath(p)); err == nil {
			n += m.Size()
		}
		files = append(files, PrunedFile{Path: p, Bytes: n, LastUsed: used, mod: fi.ModTime(), size: fi.Size()})
	}
	// Most recently used first; ties by name, so the order is stable.
	slices.SortFunc(files, func(a, b PrunedFile) int {
		if c := b.LastUsed.Compare(a.LastUsed); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	for i, f := range files {
		remove := (opt.Keep < 0 || i >= opt.Keep) && (opt.OlderThan <= 0 || now.Sub(f.LastUsed) >= opt.OlderThan)
		if !remove {
			res.Kept++
			continue
		}
		if opt.DryRun {
			res.Removed, res.Freed = append(res.Removed, f), res.Freed+f.Bytes
			continue
		}
		busy, err := removeLocked(ctx, &f)
		switch {
		case err != nil:
			return res, err
		case busy:
			res.Busy = append(res.Busy, f.Path)
			res.Kept++
		default:
			res.Removed, res.Freed = append(res.Removed, f), res.Freed+f.Bytes
		}
	}
	return res, nil
}

// removeLocked removes the cache file f and its marker under the key's
// lock; busy: another process holds the lock (it is building the file),
// or rebuilt it since it was listed, and nothing was removed.
func removeLocked(ctx context.Context, f *PrunedFile) (busy bool, err error) {
	path := f.Path
	if err := ctx.Err(); err != nil {
		return false, err
	}
	// An already cancelled context makes the lock a single try.
	try, cancel := context.WithCancel(ctx)
	cancel()
	lock, err := lockFile(try, path+".lock")
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() == nil {
			return true, nil
		}
		return false, fmt.Errorf("prune dataset cache: %w", err)
	}
	defer lock.unlock()
	if fi, err := os.Stat(path); err == nil && (!fi.ModTime().Equal(f.mod) || fi.Size() != f.size) {
		return true, nil // rebuilt since it was listed: in use
	}
	for _, p := range []string{path, markerPath(path)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("prune dataset cache: %w", err)
		}
	}
	return false, nil
}

// WriteText prints r for people: a line per file removed (or, when dry,
// that would be), per file left because a build held it, and the total.
// Times are local.
func (r *PruneResult) WriteText(w io.Writer, dry bool) {
	verb := "removed"
	if dry {
		verb = "would remove"
	}
	for _, f := range r.Removed {
		fmt.Fprintf(w, "%s %s (%.1f MB with its marker, last used %s)\n", verb, f.Path, float64(f.Bytes)/1e6, f.LastUsed.Local().Format("2006-01-02 15:04"))
	}
	for _, b := range r.Busy {
		fmt.Fprintf(w, "left %s: a build holds its lock\n", b)
	}
	fmt.Fprintf(w, "%s %d dataset cache files in %s, %.1f MB; %d left\n", verb, len(r.Removed), r.Dir, float64(r.Freed)/1e6, r.Kept)
}
