//go:build !unix

package dataset

import (
	"context"
	"fmt"
	"os"
)

// fileLock is a lock file without an OS lock on systems without flock:
// concurrent builders may both build; the atomic rename keeps the result
// consistent.
type fileLock struct {
	f    *os.File
	path string
}

func lockFile(ctx context.Context, path string) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &fileLock{f: f, path: path}, nil
}

func (l *fileLock) unlock() error {
	err := l.f.Close()
	if rerr := os.Remove(l.path); err == nil && !os.IsNotExist(rerr) {
		err = rerr
	}
	return err
}
