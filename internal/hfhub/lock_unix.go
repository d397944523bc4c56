//go:build unix

package hfhub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// fileLock is an exclusive advisory lock (flock) on a lock file.
type fileLock struct{ f *os.File }

// tryLock takes an exclusive flock on path without waiting; ok is false
// when another holder has it.
func tryLock(path string) (l *fileLock, ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if errors.Is(err, os.ErrPermission) {
		// Another user's lock file in a shared cache: flock works on a
		// read-only descriptor too.
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return &fileLock{f: f}, true, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			f.Close()
			return nil, false, nil
		}
		f.Close()
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
}

// lock waits for the lock on path, polling so that ctx can cancel the
// wait; waiting is called once if the lock is held by someone else.
func lock(ctx context.Context, path string, waiting func()) (*fileLock, error) {
	delay := 2 * time.Millisecond
	told := false
	for {
		l, ok, err := tryLock(path)
		if err != nil || ok {
			return l, err
		}
		if !told && waiting != nil {
			waiting()
			told = true
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("wait for lock %s: %w", path, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// unlock releases the lock. The lock file stays (removing it would let a
// waiter lock an unlinked inode while a newcomer locks a new file).
func (l *fileLock) unlock() {
	unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	l.f.Close()
}

// freeBytes returns the bytes available to this user on dir's file
// system; ok is false when that cannot be told.
func freeBytes(dir string) (n int64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}

// isDiskFull reports a full file system or an exceeded quota.
func isDiskFull(err error) bool {
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT)
}
