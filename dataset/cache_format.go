package dataset

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"unsafe"
)

// The binary layout of a dataset cache file; docs/cache-format.md is the
// normative description and must change together with this file.

// CacheFormatVersion is the version of the dataset cache file format. A
// reader accepts exactly this version; any change to the layout or to what a
// field means bumps it, and the bump also changes every cache key, so old
// files are simply never looked up again.
const CacheFormatVersion uint32 = 1

// ErrCacheCorrupt marks a cache file that is truncated, malformed or fails a
// checksum. Open treats it as a miss and rebuilds; check with errors.Is.
var ErrCacheCorrupt = errors.New("dataset cache corrupt")

// ErrCacheVersion marks a cache file written in another format version.
// Open treats it as a miss and rebuilds; check with errors.Is.
var ErrCacheVersion = errors.New("dataset cache format version mismatch")

const (
	cacheMagic       = "AGPFDSC\x00" // 8 bytes at offset 0 and at the end of the file
	headerSize       = 64
	sectionEntrySize = 32
	footerSize       = 16
	numSections      = 7
)

// castagnoli is the CRC32-C table used for every checksum in the file.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Section identifiers. Every file holds each of them exactly once.
const (
	secStrings   uint32 = 1 // interned strings
	secLists     uint32 = 2 // interned lists of string ids
	secTraces    uint32 = 3 // trace table (columnar)
	secSubagents uint32 = 4 // subagent table (columnar)
	secRequests  uint32 = 5 // request table (columnar)
	secHashIDs   uint32 = 6 // every request's hash ids, one []uint32
	secMeta      uint32 = 7 // identity and load statistics, JSON
)

var sectionNames = [...]string{
	secStrings: "strings", secLists: "lists", secTraces: "traces",
	secSubagents: "subagents", secRequests: "requests", secHashIDs: "hash-ids",
	secMeta: "meta",
}

func sectionName(id uint32) string {
	if int(id) < len(sectionNames) && sectionNames[id] != "" {
		return sectionNames[id]
	}
	return fmt.Sprintf("section-%d", id)
}

// Column schemas of the three tables: the byte width of each column, in
// order. A table section holds the columns one after another, each padded to
// 8 bytes; its row count is in the section table.

// Trace table columns.
const (
	tcBlockSize = iota // i64
	tcToolTokens
	tcSystemTokens
	tcID // u32 string id
	tcModels
	tcScope
	tcReqStart
	tcReqCount
	tcSubStart
	tcSubCount
	tcHashStart // u64: first hash id of the trace
	tcHashEnd   // u64: one past the last
)

var traceCols = []int{8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 8, 8}

// Subagent table columns.
const (
	scT = iota // f64
	scDurationMs
	scAfter // i64
	scTotalTokens
	scToolUseCount
	scToolTokens
	scSystemTokens
	scAgentID // u32 string id
	scType
	scStatus
	scModels // u32 list id
	scReqStart
	scReqCount
	scChildStart
	scChildCount
	scTrace
)

var subagentCols = []int{8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4, 4}

// Request table columns.
const (
	rcT = iota // f64
	rcAPITime
	rcThinkTime
	rcTTFT
	rcIn // i64
	rcOut
	rcHashOff // u64 index into the hash-id section
	rcHashLen // u32
	rcType    // u32 string id
	rcModel
	rcStop
	rcInputTypes // u32 list id
	rcOutputTypes
	rcTrace // u32 trace row
	rcOwner // u32: 0 for a parent request, k+1 for subagent row k
)

var requestCols = []int{8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4}

// noString is the string id of an empty string, which is never stored.
const noString = 0

func align8(n int) int { return (n + 7) &^ 7 }

// tableSize returns the byte size of a table section with rows rows.
func tableSize(cols []int, rows int) int {
	n := 0
	for _, w := range cols {
		n += align8(w * rows)
	}
	return n
}

// table is a read-only view of a columnar table section.
type table struct {
	data []byte
	rows int
	off  []int // byte offset of each column
}

func newTable(data []byte, cols []int, rows int) table {
	t := table{data: data, rows: rows, off: make([]int, len(cols))}
	o := 0
	for i, w := range cols {
		t.off[i] = o
		o += align8(w * rows)
	}
	return t
}

func (t *table) u32(col, row int) uint32 {
	return binary.LittleEndian.Uint32(t.data[t.off[col]+4*row:])
}

func (t *table) u64(col, row int) uint64 {
	return binary.LittleEndian.Uint64(t.data[t.off[col]+8*row:])
}

func (t *table) i64(col, row int) int64 { return int64(t.u64(col, row)) }

func (t *table) int(col, row int) int { return int(t.i64(col, row)) }

func (t *table) f64(col, row int) float64 { return math.Float64frombits(t.u64(col, row)) }

// tableWriter fills a columnar table section in memory.
type tableWriter struct {
	cols [][]byte
	w    []int
}

func newTableWriter(cols []int, rows int) *tableWriter {
	tw := &tableWriter{cols: make([][]byte, len(cols)), w: cols}
	for i, w := range cols {
		tw.cols[i] = make([]byte, align8(w*rows))
	}
	return tw
}

func (tw *tableWriter) putU32(col, row int, v uint32) {
	binary.LittleEndian.PutUint32(tw.cols[col][4*row:], v)
}

func (tw *tableWriter) putU64(col, row int, v uint64) {
	binary.LittleEndian.PutUint64(tw.cols[col][8*row:], v)
}

func (tw *tableWriter) putInt(col, row int, v int) { tw.putU64(col, row, uint64(int64(v))) }

func (tw *tableWriter) putF64(col, row int, v float64) {
	tw.putU64(col, row, math.Float64bits(v))
}

func (tw *tableWriter) bytes() []byte {
	n := 0
	for _, c := range tw.cols {
		n += len(c)
	}
	out := make([]byte, 0, n)
	for _, c := range tw.cols {
		out = append(out, c...)
	}
	return out
}

// blobArray encodes n variable-length items: u32 count, u32 offsets[n+1]
// (relative to the payload), padding to 8, then the payload.
func encodeBlobArray(items [][]byte) []byte {
	n := len(items)
	head := align8(4 + 4*(n+1))
	total := 0
	for _, it := range items {
		total += len(it)
	}
	out := make([]byte, head, head+align8(total))
	binary.LittleEndian.PutUint32(out[0:], uint32(n))
	o := 0
	for i, it := range items {
		binary.LittleEndian.PutUint32(out[4+4*i:], uint32(o))
		o += len(it)
	}
	binary.LittleEndian.PutUint32(out[4+4*n:], uint32(o))
	for _, it := range items {
		out = append(out, it...)
	}
	for len(out)%8 != 0 {
		out = append(out, 0)
	}
	return out
}

// decodeBlobArray validates a blob array section and returns the item
// boundaries: item i is payload[offs[i]:offs[i+1]].
func decodeBlobArray(data []byte, what string) (offs []uint32, payload []byte, err error) {
	if len(data) < 8 {
		return nil, nil, corruptf("%s section: %d bytes, too short for its count", what, len(data))
	}
	n := uint64(binary.LittleEndian.Uint32(data))
	head := uint64(align8(int(4 + 4*(n+1))))
	if n > uint64(len(data)) || head > uint64(len(data)) {
		return nil, nil, corruptf("%s section: %d items do not fit in %d bytes", what, n, len(data))
	}
	payload = data[head:]
	offs = make([]uint32, n+1)
	prev := uint32(0)
	for i := range offs {
		o := binary.LittleEndian.Uint32(data[4+4*i:])
		if o < prev || uint64(o) > uint64(len(payload)) {
			return nil, nil, corruptf("%s section: item %d offset %d out of order or past the %d-byte payload", what, i, o, len(payload))
		}
		offs[i] = o
		prev = o
	}
	if offs[0] != 0 {
		return nil, nil, corruptf("%s section: first offset %d, want 0", what, offs[0])
	}
	if rest := len(payload) - int(offs[n]); rest < 0 || rest >= 8 {
		return nil, nil, corruptf("%s section: %d trailing bytes after the payload", what, rest)
	}
	return offs, payload, nil
}

// corruptf returns an error wrapping ErrCacheCorrupt.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCacheCorrupt, fmt.Sprintf(format, args...))
}

// littleEndian reports whether the machine stores integers little-endian,
// which is what lets hash ids be viewed in place.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// u32Bytes views v as bytes in machine order (little-endian hosts only).
func u32Bytes(v []uint32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// u32View returns b (4-aligned, len a multiple of 4) as []uint32 without
// copying on little-endian hosts, and as a decoded copy elsewhere.
func u32View(b []byte) []uint32 {
	if len(b) == 0 {
		return nil
	}
	if littleEndian && uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
	}
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}
