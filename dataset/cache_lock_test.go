//go:build unix

package dataset

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestLockFileExclusiveAndRemoved: lockers that remove the lock file when
// they unlock still exclude each other (a waiter on a removed file starts
// over), and no lock file is left behind.
func TestLockFileExclusiveAndRemoved(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "k.dscache.lock")
	var inside, worst atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				l, err := lockFile(context.Background(), path)
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				for {
					w := worst.Load()
					if n <= w || worst.CompareAndSwap(w, n) {
						break
					}
				}
				inside.Add(-1)
				if err := l.unlock(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if w := worst.Load(); w != 1 {
		t.Errorf("%d holders at once, want 1", w)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the lock file is left behind (stat: %v)", err)
	}
}
