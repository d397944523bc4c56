//go:build unix

package dataset

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// fileLock is an exclusive advisory lock (flock) on a lock file.
type fileLock struct {
	f    *os.File
	path string
}

// lockFile takes an exclusive flock on path, creating it if needed. It
// waits for another holder, polling so that ctx can cancel the wait. The
// holder removes the file when it unlocks, so no lock file outlives its
// use; a waiter that then gets the lock on the removed file sees that path
// no longer names the file it locked, and starts over on the new one.
func lockFile(ctx context.Context, path string) (*fileLock, error) {
	for {
		l, stale, err := lockOnce(ctx, path)
		if err != nil || !stale {
			return l, err
		}
	}
}

// lockOnce locks the file path names now; stale reports that the file was
// removed (or replaced) while this call waited for it.
func lockOnce(ctx context.Context, path string) (*fileLock, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	delay := time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			held, herr := f.Stat()
			now, nerr := os.Stat(path)
			if herr == nil && nerr == nil && os.SameFile(held, now) {
				return &fileLock{f: f, path: path}, false, nil
			}
			f.Close() // the previous holder removed it: lock the new one
			return nil, true, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, false, fmt.Errorf("lock %s: %w", path, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, false, fmt.Errorf("wait for lock %s: %w", path, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// unlock removes the lock file and releases the lock. Removing it while
// still holding the lock is safe: a waiter on the removed file notices (see
// lockFile) and a newcomer creates a fresh one.
func (l *fileLock) unlock() error {
	err := os.Remove(l.path)
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if uerr := unix.Flock(int(l.f.Fd()), unix.LOCK_UN); err == nil {
		err = uerr
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
