package dataset

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sort"
	"time"

	"github.com/edsrzf/mmap-go"
)

// OpenCache maps the cache file at path read-only and returns the corpus it
// holds.
//
// It always validates the header, the section table, the footer, every
// section's offset and size against the file, and the index: the checksums
// and rows of the string, list, trace and subagent sections and the meta
// section. The bulk sections (request table and hash ids, nearly all of
// the file and proportional to the corpus) are checksummed and checked row
// by row too, unless a marker written next to the file records that this
// very file (same size, inode, mtime and ctime) passed that full check
// before; any later write to the file changes its ctime and forces the full
// check again. This keeps a warm open at a millisecond or two whatever the
// corpus size. Even without the full check no access can go out of bounds:
// per-request references are bounds-checked when a trace is materialised.
// VerifyCache always checks everything.
//
// Failures wrap ErrCacheCorrupt or ErrCacheVersion (or are I/O errors, e.g.
// fs.ErrNotExist). The returned Corpus must be closed; see Corpus for how
// long its traces stay valid.
func OpenCache(path string) (*Corpus, error) {
	return openCache(path, verifyAuto)
}

// VerifyCaches checks each cache file of paths (VerifyCache) and prints a
// line for each to w: "ok: PATH (TIME)", "BAD: …" for a corrupt file or
// another format version, "ERROR: …" for a file it could not read. It
// returns how many failed.
func VerifyCaches(w io.Writer, paths []string) (failed int) {
	for _, p := range paths {
		t0 := time.Now()
		err := VerifyCache(p)
		switch {
		case err == nil:
			fmt.Fprintf(w, "ok: %s (%s)\n", p, time.Since(t0).Round(time.Millisecond))
		case errors.Is(err, ErrCacheCorrupt), errors.Is(err, ErrCacheVersion):
			failed++
			fmt.Fprintf(w, "BAD: %v\n", err)
		default:
			failed++
			fmt.Fprintf(w, "ERROR: %v\n", err)
		}
	}
	return failed
}

// VerifyCache checks the cache file at path completely, including the
// checksum of every section, and returns nil if it is intact. On success it
// records the verification so later opens of the unchanged file can skip
// the hash-id checksum.
func VerifyCache(path string) error {
	c, err := openCache(path, verifyFull)
	if err != nil {
		return err
	}
	return c.Close()
}

// verifyMode says how much of a cache file openCache checksums.
type verifyMode int

const (
	// verifyAuto checksums the hash ids unless a verified marker vouches
	// for the file.
	verifyAuto verifyMode = iota
	// verifyFull checksums everything.
	verifyFull
	// verifyTrusted skips the hash-id checksum: for a file this process
	// has just written from memory.
	verifyTrusted
)

// openCacheTrusted opens a file this process has just written.
func openCacheTrusted(path string) (*Corpus, error) { return openCache(path, verifyTrusted) }

func openCache(path string, mode verifyMode) (*Corpus, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open dataset cache: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("open dataset cache: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("open dataset cache %s: not a regular file", path)
	}
	if fi.Size() < headerSize+footerSize {
		return nil, fmt.Errorf("open dataset cache %s: %w", path, corruptf("file is %d bytes, shorter than a header and footer", fi.Size()))
	}
	if int64(int(fi.Size())) != fi.Size() {
		return nil, fmt.Errorf("open dataset cache %s: %d bytes do not fit in memory", path, fi.Size())
	}
	full := mode == verifyFull || (mode == verifyAuto && !verifiedMarkerMatches(path, fi))
	before := stampOf(fi)
	m, err := mmap.Map(f, mmap.RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("open dataset cache %s: mmap: %w", path, err)
	}
	// The file may shrink under the mapping from here on (another process
	// truncating it): reads fault, and Guard turns that into an error.
	unregister := registerMapping(m, path)
	var c *Corpus
	err = Guard(func() error {
		var derr error
		c, derr = decodeCache(m, full)
		return derr
	})
	if err != nil {
		unregister()
		m.Unmap()
		return nil, fmt.Errorf("open dataset cache %s: %w", path, err)
	}
	c.mapping = m
	c.unregister = unregister
	c.path = path
	if full {
		// Best effort: a missing marker only costs the next open a check.
		_ = writeVerifiedMarker(path, before, time.Now())
	}
	return c, nil
}

type sectionEntry struct {
	id, crc       uint32
	off, n, count uint64
}

// decodeCache validates data as a cache file and builds a Corpus over it.
// The Corpus references data; it does not own a mapping yet.
//
// With full, it checks every checksum and every row. Without, it skips the
// bulk sections (the request table and the hash ids, whose size grows with
// the corpus): their checksums and the per-request references are not
// checked, and materialisation bounds-checks each per-request reference
// instead, so even a file damaged behind the marker's back cannot make an
// access go out of bounds. The index (header, section table, strings,
// lists, trace and subagent tables, meta) is always checked completely.
func decodeCache(data []byte, full bool) (*Corpus, error) {
	secs, err := sectionTable(data, full)
	if err != nil {
		return nil, err
	}
	body := func(id uint32) []byte { e := secs[id]; return data[e.off : e.off+e.n] }
	c := &Corpus{cached: true}
	if c.strs, err = decodeStrings(body(secStrings), secs[secStrings].count); err != nil {
		return nil, err
	}
	if c.lists, err = decodeLists(body(secLists), secs[secLists].count, c.strs); err != nil {
		return nil, err
	}
	tableOf := func(id uint32, cols []int) (table, error) {
		e := secs[id]
		if e.count > e.n/4 && e.count > 0 {
			return table{}, corruptf("%s table claims %d rows in %d bytes", sectionName(id), e.count, e.n)
		}
		if want := uint64(tableSize(cols, int(e.count))); want != e.n {
			return table{}, corruptf("%s table is %d bytes, %d rows need %d", sectionName(id), e.n, e.count, want)
		}
		return newTable(body(id), cols, int(e.count)), nil
	}
	if c.tt, err = tableOf(secTraces, traceCols); err != nil {
		return nil, err
	}
	if c.st, err = tableOf(secSubagents, subagentCols); err != nil {
		return nil, err
	}
	if c.rt, err = tableOf(secRequests, requestCols); err != nil {
		return nil, err
	}
	// Hash ids: 4-aligned because sections are 8-aligned and the mapping
	// is page-aligned.
	he := secs[secHashIDs]
	if he.n != 4*he.count || he.count > uint64(len(data))/4 {
		return nil, corruptf("hash-id section is %d bytes for %d ids", he.n, he.count)
	}
	c.hash = u32View(body(secHashIDs))
	dec := json.NewDecoder(bytes.NewReader(body(secMeta)))
	if err := dec.Decode(&c.meta); err != nil {
		return nil, corruptf("meta section: %v", err)
	}
	c.n = c.tt.rows
	if err := c.checkRows(len(c.strs), len(c.lists), full); err != nil {
		return nil, err
	}
	return c, nil
}

// sectionTable checks the frame of a cache file (size, magic, version,
// header checksum, footer) and its section table (ids, bounds, alignment,
// no overlap), verifies the sections' checksums (with full, the bulk ones
// too) and returns the entries by section id.
func sectionTable(data []byte, full bool) (secs [numSections + 1]sectionEntry, err error) {
	size := uint64(len(data))
	if size < headerSize+footerSize {
		return secs, corruptf("file is %d bytes, shorter than a header and footer", size)
	}
	if string(data[:8]) != cacheMagic {
		return secs, corruptf("bad magic %q at offset 0: not an agentperf dataset cache", data[:8])
	}
	if v := binary.LittleEndian.Uint32(data[8:]); v != CacheFormatVersion {
		return secs, fmt.Errorf("%w: file has format version %d, this agentperf reads version %d", ErrCacheVersion, v, CacheFormatVersion)
	}
	hcrc := binary.LittleEndian.Uint32(data[60:])
	if got := crc32.Checksum(data[:60], castagnoli); got != hcrc {
		return secs, corruptf("header checksum %08x, want %08x", got, hcrc)
	}
	if want := binary.LittleEndian.Uint64(data[16:]); want != size {
		return secs, corruptf("file is %d bytes, header says %d (truncated or extended)", size, want)
	}
	foot := data[size-footerSize:]
	if string(foot[8:]) != cacheMagic || binary.LittleEndian.Uint32(foot[4:]) != CacheFormatVersion || binary.LittleEndian.Uint32(foot) != hcrc {
		return secs, corruptf("footer does not match the header (truncated or overwritten file)")
	}
	nsec := binary.LittleEndian.Uint32(data[24:])
	if nsec != numSections {
		return secs, corruptf("%d sections, want %d", nsec, numSections)
	}
	tabEnd := uint64(headerSize + nsec*sectionEntrySize)
	if tabEnd > size-footerSize {
		return secs, corruptf("section table runs past the end of the file")
	}
	tab := data[headerSize:tabEnd]
	if got, want := crc32.Checksum(tab, castagnoli), binary.LittleEndian.Uint32(data[28:]); got != want {
		return secs, corruptf("section table checksum %08x, want %08x", got, want)
	}
	order := make([]sectionEntry, 0, nsec)
	for i := uint32(0); i < nsec; i++ {
		b := tab[i*sectionEntrySize:]
		e := sectionEntry{
			id: binary.LittleEndian.Uint32(b[0:]), crc: binary.LittleEndian.Uint32(b[4:]),
			off: binary.LittleEndian.Uint64(b[8:]), n: binary.LittleEndian.Uint64(b[16:]),
			count: binary.LittleEndian.Uint64(b[24:]),
		}
		if e.id < 1 || e.id > numSections {
			return secs, corruptf("unknown section id %d in entry %d", e.id, i)
		}
		if secs[e.id].id != 0 {
			return secs, corruptf("section %s appears twice", sectionName(e.id))
		}
		if e.off%8 != 0 || e.off < uint64(align8(int(tabEnd))) || e.off > size-footerSize || e.n > size-footerSize-e.off {
			return secs, corruptf("section %s at offset %d length %d lies outside the %d-byte file body", sectionName(e.id), e.off, e.n, size)
		}
		secs[e.id] = e
		order = append(order, e)
	}
	sort.Slice(order, func(i, j int) bool { return order[i].off < order[j].off })
	for i := 1; i < len(order); i++ {
		if order[i-1].off+order[i-1].n > order[i].off {
			return secs, corruptf("sections %s and %s overlap", sectionName(order[i-1].id), sectionName(order[i].id))
		}
	}
	for _, e := range order {
		if (e.id == secHashIDs || e.id == secRequests) && !full {
			continue
		}
		if got := crc32.Checksum(data[e.off:e.off+e.n], castagnoli); got != e.crc {
			return secs, corruptf("section %s checksum %08x, want %08x", sectionName(e.id), got, e.crc)
		}
	}
	return secs, nil
}

// decodeStrings decodes the strings section, which the section table
// says holds count strings, the first of them empty.
func decodeStrings(b []byte, count uint64) ([]string, error) {
	offs, payload, err := decodeBlobArray(b, "strings")
	if err != nil {
		return nil, err
	}
	nstr := len(offs) - 1
	if uint64(nstr) != count || nstr == 0 || offs[1] != 0 {
		return nil, corruptf("strings section holds %d strings, table says %d (and string 0 must be empty)", nstr, count)
	}
	strs := make([]string, nstr)
	for i := range strs {
		strs[i] = string(payload[offs[i]:offs[i+1]])
	}
	return strs, nil
}

// decodeLists decodes the lists section (count lists of string ids, the
// first of them empty) into lists of strs.
func decodeLists(b []byte, count uint64, strs []string) ([][]string, error) {
	offs, payload, err := decodeBlobArray(b, "lists")
	if err != nil {
		return nil, err
	}
	nlist := len(offs) - 1
	if uint64(nlist) != count || nlist == 0 || offs[1] != 0 {
		return nil, corruptf("lists section holds %d lists, table says %d (and list 0 must be empty)", nlist, count)
	}
	lists := make([][]string, nlist)
	for i := range lists {
		b := payload[offs[i]:offs[i+1]]
		if len(b)%4 != 0 {
			return nil, corruptf("list %d is %d bytes, not a whole number of string ids", i, len(b))
		}
		if len(b) == 0 {
			continue
		}
		l := make([]string, len(b)/4)
		for j := range l {
			s := binary.LittleEndian.Uint32(b[4*j:])
			if uint64(s) >= uint64(len(strs)) {
				return nil, corruptf("list %d element %d names string %d of %d", i, j, s, len(strs))
			}
			l[j] = strs[s]
		}
		lists[i] = l
	}
	return lists, nil
}

// checkRows validates the references between the tables, so that
// materialising any trace stays in bounds and terminates: every subagent
// row belongs to exactly one range and children come after their parent,
// and request ranges lie inside the request table. With full it also
// checks that every request row belongs to exactly one range, with the
// owner it records, and that its string, list and hash-id references exist.
func (c *Corpus) checkRows(nstr, nlist int, full bool) error {
	k := &rowCheck{c: c, nstr: nstr, nlist: nlist, full: full, subSeen: make([]bool, c.st.rows)}
	if full {
		k.reqSeen = make([]bool, c.rt.rows)
	}
	if err := k.traces(); err != nil {
		return err
	}
	if err := k.subagents(); err != nil {
		return err
	}
	if !full {
		return nil
	}
	return k.requests()
}

// rowCheck is the state of checkRows: which request and subagent rows a
// range has claimed.
type rowCheck struct {
	c           *Corpus
	nstr, nlist int
	full        bool
	reqSeen     []bool // nil unless full
	subSeen     []bool
}

func (k *rowCheck) str(what string, row int, v uint32) error {
	if uint64(v) >= uint64(k.nstr) {
		return corruptf("%s of row %d names string %d of %d", what, row, v, k.nstr)
	}
	return nil
}

func (k *rowCheck) lst(what string, row int, v uint32) error {
	if uint64(v) >= uint64(k.nlist) {
		return corruptf("%s of row %d names list %d of %d", what, row, v, k.nlist)
	}
	return nil
}

// claimReqs claims the request rows [start, start+n) for the range of a
// trace or subagent row, checking (with full) the owner each records.
func (k *rowCheck) claimReqs(what string, row int, start, n uint32, trace, owner uint32) error {
	nreq := k.c.rt.rows
	if uint64(start)+uint64(n) > uint64(nreq) {
		return corruptf("%s row %d: requests [%d,+%d) past %d rows", what, row, start, n, nreq)
	}
	if !k.full {
		return nil
	}
	for r := start; r < start+n; r++ {
		if k.reqSeen[r] {
			return corruptf("%s row %d: request row %d claimed twice", what, row, r)
		}
		k.reqSeen[r] = true
		if k.c.rt.u32(rcTrace, int(r)) != trace || k.c.rt.u32(rcOwner, int(r)) != owner {
			return corruptf("request row %d: owner does not match %s row %d", r, what, row)
		}
	}
	return nil
}

// claimSubs claims the subagent rows [start, start+n), which must come
// after row after.
func (k *rowCheck) claimSubs(what string, row int, start, n uint32, after int) error {
	nsub := k.c.st.rows
	if uint64(start)+uint64(n) > uint64(nsub) || (n > 0 && int(start) <= after) {
		return corruptf("%s row %d: subagents [%d,+%d) out of range or not after row %d", what, row, start, n, after)
	}
	for s := start; s < start+n; s++ {
		if k.subSeen[s] {
			return corruptf("%s row %d: subagent row %d claimed twice", what, row, s)
		}
		k.subSeen[s] = true
	}
	return nil
}

// traces checks every trace row and claims its ranges.
func (k *rowCheck) traces() error {
	tt := &k.c.tt
	nhash := uint64(len(k.c.hash))
	for i := 0; i < tt.rows; i++ {
		if err := k.str("trace id", i, tt.u32(tcID, i)); err != nil {
			return err
		}
		if err := k.str("trace hash_id_scope", i, tt.u32(tcScope, i)); err != nil {
			return err
		}
		if err := k.lst("trace models", i, tt.u32(tcModels, i)); err != nil {
			return err
		}
		if err := k.claimReqs("trace", i, tt.u32(tcReqStart, i), tt.u32(tcReqCount, i), uint32(i), 0); err != nil {
			return err
		}
		if err := k.claimSubs("trace", i, tt.u32(tcSubStart, i), tt.u32(tcSubCount, i), -1); err != nil {
			return err
		}
		if hs, he := tt.u64(tcHashStart, i), tt.u64(tcHashEnd, i); hs > he || he > nhash {
			return corruptf("trace row %d: hash ids [%d,%d) outside the %d stored", i, hs, he, nhash)
		}
	}
	return nil
}

// subagents checks every subagent row (each must have been claimed by a
// row before it) and claims its ranges.
func (k *rowCheck) subagents() error {
	st, ntr := &k.c.st, k.c.tt.rows
	for i := 0; i < st.rows; i++ {
		if !k.subSeen[i] {
			return corruptf("subagent row %d belongs to no trace (or comes before its parent)", i)
		}
		for _, col := range []int{scAgentID, scType, scStatus} {
			if err := k.str("subagent string", i, st.u32(col, i)); err != nil {
				return err
			}
		}
		if err := k.lst("subagent models", i, st.u32(scModels, i)); err != nil {
			return err
		}
		tr := st.u32(scTrace, i)
		if uint64(tr) >= uint64(ntr) {
			return corruptf("subagent row %d names trace %d of %d", i, tr, ntr)
		}
		if err := k.claimReqs("subagent", i, st.u32(scReqStart, i), st.u32(scReqCount, i), tr, uint32(i+1)); err != nil {
			return err
		}
		if err := k.claimSubs("subagent", i, st.u32(scChildStart, i), st.u32(scChildCount, i), i); err != nil {
			return err
		}
	}
	return nil
}

// requests checks every request row (full only): claimed once, and its
// string, list and hash-id references in bounds.
func (k *rowCheck) requests() error {
	rt := &k.c.rt
	nhash := uint64(len(k.c.hash))
	for r := 0; r < rt.rows; r++ {
		if !k.reqSeen[r] {
			return corruptf("request row %d belongs to no trace or subagent", r)
		}
		for _, col := range []int{rcType, rcModel, rcStop} {
			if err := k.str("request string", r, rt.u32(col, r)); err != nil {
				return err
			}
		}
		for _, col := range []int{rcInputTypes, rcOutputTypes} {
			if err := k.lst("request list", r, rt.u32(col, r)); err != nil {
				return err
			}
		}
		if off, n := rt.u64(rcHashOff, r), uint64(rt.u32(rcHashLen, r)); off > nhash || n > nhash-off {
			return corruptf("request row %d: hash ids [%d,+%d) outside the %d stored", r, off, n, nhash)
		}
	}
	return nil
}

// errCorpusClosed is returned (wrapped) by accessors of a closed Corpus.
var errCorpusClosed = errors.New("dataset: corpus is closed")
