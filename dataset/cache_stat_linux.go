//go:build linux

package dataset

import (
	"os"
	"syscall"
	"time"
)

func sysStamp(fi os.FileInfo, s *fileStamp) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.CtimeNs = st.Ctim.Nano()
		s.Ino = st.Ino
		s.Dev = uint64(st.Dev)
	}
}

// accessTime is fi's access time (zero when unknown).
func accessTime(fi os.FileInfo) (t time.Time) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		t = time.Unix(0, st.Atim.Nano())
	}
	return t
}
