//go:build unix

package metrics

import "golang.org/x/sys/unix"

// FreeBytes returns the bytes available to this user in the file system
// holding dir.
func FreeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
