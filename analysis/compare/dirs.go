package compare

import (
	"fmt"
	"io"

	"github.com/agentperf/agentperf/internal/inputerr"
)

// Comparison is a comparison's result: of run folders (*Result) or of
// sweep folders (*SweepResult).
type Comparison interface {
	// WriteTable prints the comparison for people.
	WriteTable(w io.Writer)
	// Write writes its files into dir.
	Write(dir string) error
	// Written says which files Write wrote into dir.
	Written(dir string) string
}

var (
	_ Comparison = (*Result)(nil)
	_ Comparison = (*SweepResult)(nil)
)

// InputError is an error of a folder given to Dirs: it is not a run
// folder or a sweep folder, or it cannot be read.
// It is the type of every package's InputError (inputerr.Error).
type InputError = inputerr.Error

// CheckKinds refuses run folders mixed with sweep folders (an
// *InputError), before anything is read: Dirs compares either kind, not
// both.
func CheckKinds(dirs []string) error {
	sweeps := 0
	for _, d := range dirs {
		if IsSweep(d) {
			sweeps++
		}
	}
	if sweeps > 0 && sweeps < len(dirs) {
		return &InputError{Err: fmt.Errorf("compare: give run folders or sweep folders, not both (%d of %d are sweeps)", sweeps, len(dirs))}
	}
	return nil
}

// Dirs compares the folders dirs[1:] to the baseline dirs[0]: sweep
// folders (IsSweep of the first) with CompareSweeps, else run folders with
// Compare. A folder that does not load is an *InputError; folders whose
// settings differ a *DifferentSettingsError (unless o.AllowDifferent).
func Dirs(dirs []string, o Options) (Comparison, error) {
	if len(dirs) > 0 && IsSweep(dirs[0]) {
		var ss []*Sweep
		for _, d := range dirs {
			s, err := LoadSweep(d)
			if err != nil {
				return nil, &InputError{Err: err}
			}
			ss = append(ss, s)
		}
		r, err := CompareSweeps(ss, o)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	var folders []*Folder
	for _, d := range dirs {
		f, err := Load(d)
		if err != nil {
			return nil, &InputError{Err: err}
		}
		folders = append(folders, f)
	}
	r, err := Compare(folders, o)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Written says which files Write wrote into dir.
func (r *Result) Written(dir string) string {
	return fmt.Sprintf("\nwritten: %s/{%s,%s,%s}\n", dir, FileHTML, FilePNG, FileJSON)
}

// Written says which files Write wrote into dir.
func (r *SweepResult) Written(dir string) string {
	return fmt.Sprintf("written: %s/{%s,%s} (the curves overlaid)\n", dir, FileHTML, FilePNG)
}
