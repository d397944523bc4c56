package hfhub

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
)

// verifier checks downloaded bytes against what the hub says of them: the
// size always, and the content when the ETag is a checksum. The hub's
// ETag of an LFS (or Xet) file is the SHA-256 of its content (64 hex);
// that of a file stored in git is its git blob id, the SHA-1 of
// "blob <size>\x00" followed by the content (40 hex).
type verifier struct {
	h    hash.Hash
	algo string
	want string
	size int64
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func newVerifier(etag string, size int64) *verifier {
	v := &verifier{want: etag, size: size}
	switch {
	case len(etag) == 64 && isHex(etag):
		v.h, v.algo = sha256.New(), "SHA-256"
	case len(etag) == 40 && isHex(etag):
		v.h, v.algo = sha1.New(), "git blob SHA-1"
		v.h.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	}
	return v
}

func (v *verifier) Write(p []byte) (int, error) {
	if v.h != nil {
		v.h.Write(p)
	}
	return len(p), nil
}

// check compares n bytes seen with the expected size and checksum; a
// mismatch wraps ErrCorrupt.
func (v *verifier) check(n int64) error {
	if n != v.size {
		return fmt.Errorf("%w: %d bytes, the hub says %d", ErrCorrupt, n, v.size)
	}
	if v.h == nil {
		return nil
	}
	if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want {
		return fmt.Errorf("%w: %s %s, the hub's ETag says %s", ErrCorrupt, v.algo, got, v.want)
	}
	return nil
}
