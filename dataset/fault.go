package dataset

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"unsafe"
)

// ErrCacheChanged is matched (errors.Is) by the error Guard returns when
// reading a mapped cache file faulted: the file was truncated (or its
// storage failed) while a corpus served from it was in use.
var ErrCacheChanged = errors.New("the dataset cache file changed while it was in use")

// FaultError is a memory fault on a mapped cache file, caught by Guard.
type FaultError struct {
	// Path is the cache file.
	Path string
	// Offset is where in the file the fault happened.
	Offset uint64
	// Size is the size of the mapping (the file's size when it was
	// opened).
	Size uint64
	// Err is the runtime's fault error (its text speaks of an invalid
	// address; the address is valid, the file behind it is not).
	Err error
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("dataset cache %s changed while this run was reading it: reading byte %d of its %d-byte mapping faulted (the file is shorter now, or its storage failed), so another process truncated or damaged it; run again, and do not modify the cache while a run uses it (or read the corpus without the dataset cache, into memory)",
		e.Path, e.Offset, e.Size)
}

// Unwrap returns ErrCacheChanged.
func (e *FaultError) Unwrap() error { return ErrCacheChanged }

// Guard runs f and returns its error, except that a memory fault on a
// mapped cache file while f runs (a SIGBUS because the file was truncated
// under the mapping, or a failing disk) is returned as a *FaultError
// instead of crashing the process.
//
// A Corpus served from a cache maps its file, and the hash ids of the
// traces it hands out (Request.HashIDs) are views into that mapping, read
// lazily by whoever builds prompts from them. Every piece of code that
// reads a cached corpus's traces after Open should therefore run inside
// Guard, on the goroutine that does the reading: the protection
// (debug.SetPanicOnFault) is per goroutine and only lasts for the call.
// Guard is cheap (a few nanoseconds), so calling it once per request is
// fine. Faults at addresses outside any open cache mapping, and every
// other panic, are not caught: they are bugs, and propagate unchanged.
func Guard(f func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		v := recover()
		if v == nil {
			return
		}
		if fe := faultOnMapping(v); fe != nil {
			err = fe
			return
		}
		panic(v)
	}()
	return f()
}

// faultOnMapping returns the FaultError for a panic value raised by a
// memory fault inside a registered mapping, else nil.
func faultOnMapping(v any) *FaultError {
	re, ok := v.(interface {
		error
		Addr() uintptr
	})
	if !ok {
		return nil
	}
	addr := re.Addr()
	mappings.mu.Lock()
	defer mappings.mu.Unlock()
	for _, m := range mappings.live {
		if addr >= m.start && addr-m.start < m.size {
			return &FaultError{Path: m.path, Offset: uint64(addr - m.start), Size: uint64(m.size), Err: re}
		}
	}
	return nil
}

// mappings lists the cache files mapped by this process, so that a fault
// address can be traced back to its file. It is process-wide because the
// address space is.
var mappings struct {
	mu   sync.Mutex
	live []mapping
}

type mapping struct {
	start, size uintptr
	path        string
}

// registerMapping records data (a mapping of path) and returns the
// function that forgets it, to call before unmapping.
func registerMapping(data []byte, path string) (unregister func()) {
	if len(data) == 0 {
		return func() {}
	}
	m := mapping{start: addrOf(data), size: uintptr(len(data)), path: path}
	mappings.mu.Lock()
	mappings.live = append(mappings.live, m)
	mappings.mu.Unlock()
	return func() {
		mappings.mu.Lock()
		defer mappings.mu.Unlock()
		for i, x := range mappings.live {
			if x == m {
				mappings.live = append(mappings.live[:i], mappings.live[i+1:]...)
				return
			}
		}
	}
}

// addrOf is the address of data's first byte (data is not empty).
func addrOf(data []byte) uintptr { return uintptr(unsafe.Pointer(&data[0])) }
