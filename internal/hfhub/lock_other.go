//go:build !unix

package hfhub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// fileLock is an exclusive lock file created with O_EXCL (no flock on
// this platform); a holder that dies leaves it behind, and it is taken
// over after staleLock.
type fileLock struct{ path string }

const staleLock = 10 * time.Minute

func lock(ctx context.Context, path string, waiting func()) (*fileLock, error) {
	told := false
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
			return &fileLock{path: path}, nil
		}
		if !os.IsExist(err) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if fi, serr := os.Stat(path); serr == nil && time.Since(fi.ModTime()) > staleLock {
			os.Remove(path)
			continue
		}
		if !told && waiting != nil {
			waiting()
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for lock %s: %w", path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (l *fileLock) unlock() { os.Remove(l.path) }

func freeBytes(string) (int64, bool) { return 0, false }

func isDiskFull(err error) bool { return errors.Is(err, syscall.ENOSPC) }
