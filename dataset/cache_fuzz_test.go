package dataset

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

// fixChecksums rewrites the checksums of a (possibly mutated) cache file so
// that the fuzzer gets past them and exercises the structural checks. It
// leaves files whose layout it cannot follow alone.
func fixChecksums(b []byte) {
	if len(b) < headerSize+numSections*sectionEntrySize+footerSize {
		return
	}
	tab := b[headerSize : headerSize+numSections*sectionEntrySize]
	for i := 0; i < numSections; i++ {
		e := tab[i*sectionEntrySize:]
		off, n := binary.LittleEndian.Uint64(e[8:]), binary.LittleEndian.Uint64(e[16:])
		if off <= uint64(len(b)) && n <= uint64(len(b))-off {
			binary.LittleEndian.PutUint32(e[4:], crc32.Checksum(b[off:off+n], castagnoli))
		}
	}
	binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(tab, castagnoli))
	h := crc32.Checksum(b[:60], castagnoli)
	binary.LittleEndian.PutUint32(b[60:], h)
	binary.LittleEndian.PutUint32(b[len(b)-footerSize:], h)
}

// FuzzOpenCache feeds arbitrary bytes to the cache decoder, as they are or
// with their checksums repaired. Decoding must fail cleanly or produce a
// corpus whose every trace can be materialised; a fully verified one must
// also survive a re-encode unchanged.
func FuzzOpenCache(f *testing.F) {
	for i, n := range []int{0, 1, 3, 12} {
		b, err := encodeBytes(cacheGenTraces(uint64(i), n), cacheMeta{Identity: Identity{Path: "p", Traces: n}})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		f.Add(b, true)
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "cache-v1.dscache")); err == nil {
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Add([]byte(cacheMagic), false)
	f.Fuzz(func(t *testing.T, data []byte, repair bool) {
		data = bytes.Clone(data)
		if repair {
			fixChecksums(data)
		}
		// The fast path (a verified marker vouches for the file) checks
		// less; materialising must still stay in bounds.
		if c, err := decodeCache(data, false); err == nil {
			_ = c.Traces()
		}
		c, err := decodeCache(data, true)
		if err != nil {
			return
		}
		traces := c.Traces()
		b, err := encodeBytes(traces, c.meta)
		if err != nil {
			t.Fatalf("a decoded corpus does not re-encode: %v", err)
		}
		c2, err := decodeCache(b, true)
		if err != nil {
			t.Fatalf("re-encoded corpus does not decode: %v", err)
		}
		if d := cacheDiffTraces(traces, c2.Traces()); d != "" {
			t.Fatalf("re-encode changed the corpus: %s", d)
		}
	})
}

// encodeBytes returns the cache file for traces as bytes.
func encodeBytes(traces []Trace, meta cacheMeta) ([]byte, error) {
	enc, err := encodeCache(traces, meta)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	head, err := enc.writeBody(&buf)
	if err != nil {
		return nil, err
	}
	b := buf.Bytes()
	copy(b, head)
	return b, nil
}
