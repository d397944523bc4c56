//go:build !unix

package metrics

import "errors"

// FreeBytes is not implemented on this system.
func FreeBytes(dir string) (int64, error) {
	return 0, errors.ErrUnsupported
}
