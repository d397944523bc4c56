package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// FileLock is the file in an artifact folder that a run holds an exclusive
// lock on (flock) for as long as it runs, so that two runs never write
// into one folder (docs/artifacts.md, "One run per folder"). It stays
// after the run (removing a lock file others may be waiting on is a race)
// and is not an artifact.
const FileLock = ".agentperf-lock"

// artifactPrefixes are the names of what a run writes into its folder
// (besides the lock and the reserve): the files of docs/artifacts.md,
// their .partial and temporary forms, the shard manifest.
var artifactPrefixes = []string{
	"profile_export", "context_overflow_export", "server_metrics_export",
	"metrics_plots", "report.html", FileShard,
}

// priorArtifacts lists (sorted, relative to dir) the files in dir that a
// run writes: what an earlier run left there.
func priorArtifacts(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var found []string
	for _, e := range ents {
		name := e.Name()
		for _, p := range artifactPrefixes {
			if strings.HasPrefix(name, p) && !e.IsDir() {
				found = append(found, name)
				break
			}
		}
	}
	logs, err := os.ReadDir(filepath.Join(dir, "logs"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range logs {
		if strings.HasPrefix(e.Name(), "aiperf.log") && !e.IsDir() {
			found = append(found, filepath.Join("logs", e.Name()))
		}
	}
	slices.Sort(found)
	return found, nil
}

// ErrFolderInUse is the error of a run whose artifact folder another run
// holds (FileLock).
var ErrFolderInUse = errors.New("another agentperf run is writing to this artifact folder")

// claimFolder creates dir, takes the exclusive lock on its FileLock for
// the whole run (the returned func releases it), and deals with what an
// earlier run left there: without clear it refuses a folder holding
// artifacts (naming them); with clear it removes them first and returns
// their names. Nothing in the folder is touched before the lock is held,
// so a run refused here (a duplicate shard, a second run into the same
// folder) cannot truncate the log of the run that holds it.
func claimFolder(dir string, clear bool) (release func(), removed []string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("create --output-artifact-dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileLock)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open the lock file of --output-artifact-dir %s: %w (is the directory writable?)", dir, err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("lock --output-artifact-dir %s (%s): %w", dir, path, err)
	}
	if !held {
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		f.Close()
		who := ""
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n]))); err == nil {
			who = fmt.Sprintf(" (pid %d)", pid)
		}
		return nil, nil, fmt.Errorf("%w: %s%s holds its lock %s for as long as it runs; give each run (and each shard) its own --output-artifact-dir", ErrFolderInUse, dir, who, FileLock)
	}
	release = func() { unlock(f); f.Close() }
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	prior, err := priorArtifacts(dir)
	if err != nil {
		release()
		return nil, nil, fmt.Errorf("look for an earlier run's artifacts in %s: %w", dir, err)
	}
	if len(prior) == 0 {
		return release, nil, nil
	}
	if !clear {
		release()
		return nil, nil, fmt.Errorf("--output-artifact-dir %s holds another run's artifacts (%s): a run there would leave them beside its own, and a check of the folder could pass on a mix of two runs; choose an empty folder, or pass --overwrite-artifacts to remove them first", dir, listNames(prior, 4))
	}
	for _, name := range prior {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			release()
			return nil, nil, fmt.Errorf("--overwrite-artifacts: remove %s: %w", filepath.Join(dir, name), err)
		}
	}
	return release, prior, nil
}

// listNames joins the first n names and says how many more there are.
func listNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
