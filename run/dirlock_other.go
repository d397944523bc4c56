//go:build !unix

package run

import "os"

// tryLock is not implemented on this system: the folder is not locked.
func tryLock(f *os.File) (bool, error) { return true, nil }

// unlock does nothing where tryLock does not lock.
func unlock(f *os.File) {}
