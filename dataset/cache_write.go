package dataset

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// cacheMeta is the JSON stored in the meta section: where the corpus came
// from and what loading it saw, so that a warm open can report the same
// numbers as the cold build without reading the source.
type cacheMeta struct {
	Identity Identity      `json:"identity"`
	Read     cacheReadMeta `json:"read"`
	Select   SelectStats   `json:"select"`
	Key      string        `json:"key,omitempty"`
}

type cacheReadMeta struct {
	Traces           int      `json:"traces"`
	Skipped          int      `json:"skipped"`
	Errors           []string `json:"errors,omitempty"`
	SubagentEntries  int      `json:"subagent_entries"`
	SubagentRequests int      `json:"subagent_requests"`
}

func readMetaFromStats(s ReadStats) cacheReadMeta {
	m := cacheReadMeta{Traces: s.Traces, Skipped: s.Skipped, SubagentEntries: s.SubagentEntries, SubagentRequests: s.SubagentRequests}
	for _, e := range s.Errors {
		m.Errors = append(m.Errors, e.Error())
	}
	return m
}

func (m cacheReadMeta) stats() ReadStats {
	s := ReadStats{Traces: m.Traces, Skipped: m.Skipped, SubagentEntries: m.SubagentEntries, SubagentRequests: m.SubagentRequests}
	for _, e := range m.Errors {
		s.Errors = append(s.Errors, errors.New(e))
	}
	return s
}

// WriteCache writes traces and their identity to a cache file at path,
// atomically: it writes a temporary file in the same directory, fsyncs it,
// renames it over path and fsyncs the directory, so a reader sees either
// the old file, no file, or the complete new one. See docs/cache-format.md.
func WriteCache(path string, traces []Trace, id Identity) error {
	return writeCache(path, traces, cacheMeta{Identity: id})
}

func writeCache(path string, traces []Trace, meta cacheMeta) (err error) {
	enc, err := encodeCache(traces, meta)
	if err != nil {
		return fmt.Errorf("write dataset cache %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write dataset cache: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// Cache directories are often shared between users of a machine;
	// CreateTemp's 0600 would lock the others out (umask still applies to
	// nothing here: the mode is set explicitly, like os.WriteFile's 0644).
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("write dataset cache: %w", err)
	}
	if err = enc.writeTo(f); err != nil {
		return fmt.Errorf("write dataset cache %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write dataset cache: fsync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write dataset cache: close %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write dataset cache: %w", err)
	}
	if err = syncDir(dir); err != nil {
		return fmt.Errorf("write dataset cache: fsync directory %s: %w", dir, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// encodedCache is a cache file ready to be written: every section but the
// hash ids is in memory; the hash ids are streamed from the traces.
type encodedCache struct {
	small  [][]byte // sections secStrings..secMeta except secHashIDs, in file order
	ids    []uint32 // their section ids
	counts []uint64
	hashes [][]uint32 // every request's hash ids, in request-row order
	nhash  uint64
}

type reqRef struct {
	r            *Request
	trace, owner uint32
}

// encodeCache lays out traces as the columnar tables of the format.
func encodeCache(traces []Trace, meta cacheMeta) (*encodedCache, error) {
	if uint64(len(traces)) > math.MaxUint32 {
		return nil, fmt.Errorf("%d traces exceed the format's limit", len(traces))
	}
	nsub, nreq := countRows(traces)
	if uint64(nsub) > math.MaxUint32-1 || uint64(nreq) > math.MaxUint32 {
		return nil, fmt.Errorf("%d subagents or %d requests exceed the format's limit", nsub, nreq)
	}
	e := newEncoder(nsub, nreq)
	tt := e.traceTable(traces)
	rt, err := e.requestTable()
	if err != nil {
		return nil, err
	}
	strs, lists, err := e.blobSections()
	if err != nil {
		return nil, err
	}
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("encode identity: %w", err)
	}
	return &encodedCache{
		small:  [][]byte{strs, lists, tt.bytes(), e.st.bytes(), rt.bytes(), metaJSON},
		ids:    []uint32{secStrings, secLists, secTraces, secSubagents, secRequests, secMeta},
		counts: []uint64{uint64(len(e.strs)), uint64(len(e.lists)), uint64(len(traces)), uint64(nsub), uint64(nreq), 0},
		hashes: e.hashes,
		nhash:  e.nhash,
	}, nil
}

// countRows counts the subagent and request rows of traces, so that the
// tables can be sized once.
func countRows(traces []Trace) (nsub, nreq int) {
	var count func([]Subagent)
	count = func(ss []Subagent) {
		nsub += len(ss)
		for i := range ss {
			nreq += len(ss[i].Requests)
			count(ss[i].Subagents)
		}
	}
	for i := range traces {
		nreq += len(traces[i].Requests)
		count(traces[i].Subagents)
	}
	return nsub, nreq
}

// encoder holds what encodeCache builds: the interned strings and lists,
// the subagent table, every request (in row order) and its hash ids.
type encoder struct {
	strs    []string
	strIdx  map[string]uint32
	lists   [][]uint32
	listIdx map[string]uint32
	kb      strings.Builder

	st      *tableWriter
	refs    []reqRef
	nextSub int
	hashes  [][]uint32
	nhash   uint64
}

func newEncoder(nsub, nreq int) *encoder {
	return &encoder{
		strs: []string{""}, strIdx: map[string]uint32{"": noString},
		lists: [][]uint32{nil}, listIdx: map[string]uint32{"": 0},
		st: newTableWriter(subagentCols, nsub), refs: make([]reqRef, 0, nreq), hashes: make([][]uint32, 0, nreq),
	}
}

// str interns s and returns its index in the strings section.
func (e *encoder) str(s string) uint32 {
	if i, ok := e.strIdx[s]; ok {
		return i
	}
	i := uint32(len(e.strs))
	e.strs = append(e.strs, s)
	e.strIdx[s] = i
	return i
}

// list interns ss and returns its index in the lists section (0 for none).
func (e *encoder) list(ss []string) uint32 {
	if len(ss) == 0 {
		return 0
	}
	e.kb.Reset()
	for _, s := range ss {
		e.kb.WriteString(s)
		e.kb.WriteByte(0)
	}
	if i, ok := e.listIdx[e.kb.String()]; ok {
		return i
	}
	ids := make([]uint32, len(ss))
	for j, s := range ss {
		ids[j] = e.str(s)
	}
	i := uint32(len(e.lists))
	e.lists = append(e.lists, ids)
	e.listIdx[e.kb.String()] = i
	return i
}

// addReqs appends the request rows of rs (of trace, owned by subagent row
// owner-1, or the root for 0) and returns where they start and how many.
func (e *encoder) addReqs(rs []Request, trace, owner uint32) (start, n uint32) {
	start = uint32(len(e.refs))
	for i := range rs {
		e.refs = append(e.refs, reqRef{r: &rs[i], trace: trace, owner: owner})
	}
	return start, uint32(len(rs))
}

// fillSubagents writes the subagent rows [start, start+len(ss)), which the
// caller has reserved, then reserves and fills each entry's children.
// Children therefore always sit after their parent, which the reader
// checks.
func (e *encoder) fillSubagents(ss []Subagent, start int, trace uint32) {
	st := e.st
	for i := range ss {
		s := &ss[i]
		row := start + i
		st.putF64(scT, row, s.T)
		st.putF64(scDurationMs, row, s.DurationMs)
		st.putInt(scAfter, row, s.After)
		st.putInt(scTotalTokens, row, s.TotalTokens)
		st.putInt(scToolUseCount, row, s.ToolUseCount)
		st.putInt(scToolTokens, row, s.ToolTokens)
		st.putInt(scSystemTokens, row, s.SystemTokens)
		st.putU32(scAgentID, row, e.str(s.AgentID))
		st.putU32(scType, row, e.str(s.SubagentType))
		st.putU32(scStatus, row, e.str(s.Status))
		st.putU32(scModels, row, e.list(s.Models))
		rs, rn := e.addReqs(s.Requests, trace, uint32(row+1))
		st.putU32(scReqStart, row, rs)
		st.putU32(scReqCount, row, rn)
		cs := e.nextSub
		e.nextSub += len(s.Subagents)
		st.putU32(scChildStart, row, uint32(cs))
		st.putU32(scChildCount, row, uint32(len(s.Subagents)))
		st.putU32(scTrace, row, trace)
		e.fillSubagents(s.Subagents, cs, trace)
	}
}

// traceTable writes the trace table, and through it the subagent rows,
// the request rows and the hash-id ranges of every trace.
func (e *encoder) traceTable(traces []Trace) *tableWriter {
	tt := newTableWriter(traceCols, len(traces))
	for ti := range traces {
		t := &traces[ti]
		tt.putInt(tcBlockSize, ti, t.BlockSize)
		tt.putInt(tcToolTokens, ti, t.ToolTokens)
		tt.putInt(tcSystemTokens, ti, t.SystemTokens)
		tt.putU32(tcID, ti, e.str(t.ID))
		tt.putU32(tcModels, ti, e.list(t.Models))
		tt.putU32(tcScope, ti, e.str(t.HashIDScope))
		first := len(e.refs)
		rs, rn := e.addReqs(t.Requests, uint32(ti), 0)
		tt.putU32(tcReqStart, ti, rs)
		tt.putU32(tcReqCount, ti, rn)
		ss := e.nextSub
		e.nextSub += len(t.Subagents)
		tt.putU32(tcSubStart, ti, uint32(ss))
		tt.putU32(tcSubCount, ti, uint32(len(t.Subagents)))
		e.fillSubagents(t.Subagents, ss, uint32(ti))
		tt.putU64(tcHashStart, ti, e.nhash)
		for _, ref := range e.refs[first:] {
			e.hashes = append(e.hashes, ref.r.HashIDs)
			e.nhash += uint64(len(ref.r.HashIDs))
		}
		tt.putU64(tcHashEnd, ti, e.nhash)
	}
	return tt
}

// requestTable writes the request table from the rows traceTable
// collected.
func (e *encoder) requestTable() (*tableWriter, error) {
	rt := newTableWriter(requestCols, len(e.refs))
	var off uint64
	for row, ref := range e.refs {
		r := ref.r
		rt.putF64(rcT, row, r.T)
		rt.putF64(rcAPITime, row, r.APITime)
		rt.putF64(rcThinkTime, row, r.ThinkTime)
		rt.putF64(rcTTFT, row, r.TTFT)
		rt.putInt(rcIn, row, r.In)
		rt.putInt(rcOut, row, r.Out)
		rt.putU64(rcHashOff, row, off)
		if uint64(len(r.HashIDs)) > math.MaxUint32 {
			return nil, fmt.Errorf("request with %d hash ids exceeds the format's limit", len(r.HashIDs))
		}
		rt.putU32(rcHashLen, row, uint32(len(r.HashIDs)))
		off += uint64(len(r.HashIDs))
		rt.putU32(rcType, row, e.str(r.Type))
		rt.putU32(rcModel, row, e.str(r.Model))
		rt.putU32(rcStop, row, e.str(r.Stop))
		rt.putU32(rcInputTypes, row, e.list(r.InputTypes))
		rt.putU32(rcOutputTypes, row, e.list(r.OutputTypes))
		rt.putU32(rcTrace, row, ref.trace)
		rt.putU32(rcOwner, row, ref.owner)
	}
	return rt, nil
}

// blobSections encodes the interned strings and lists as their sections.
// It runs last: the tables intern as they are written.
func (e *encoder) blobSections() (strs, lists []byte, err error) {
	strItems := make([][]byte, len(e.strs))
	total := 0
	for i, s := range e.strs {
		strItems[i] = []byte(s)
		total += len(s)
	}
	if uint64(total) > math.MaxUint32 {
		return nil, nil, fmt.Errorf("%d bytes of strings exceed the format's limit", total)
	}
	listItems := make([][]byte, len(e.lists))
	for i, l := range e.lists {
		b := make([]byte, 4*len(l))
		for j, v := range l {
			binary.LittleEndian.PutUint32(b[4*j:], v)
		}
		listItems[i] = b
	}
	return encodeBlobArray(strItems), encodeBlobArray(listItems), nil
}

// writeTo writes the complete file to f, which must be empty.
func (e *encodedCache) writeTo(f *os.File) error {
	head, err := e.writeBody(f)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(head, 0)
	return err
}

// writeBody writes the file to w with a zeroed header and section table,
// and returns the real header and table, which belong at offset 0 once the
// body is written.
func (e *encodedCache) writeBody(w io.Writer) (head []byte, err error) {
	type entry struct {
		id, crc       uint32
		off, n, count uint64
	}
	var entries []entry
	tableStart := headerSize
	pos := uint64(align8(tableStart + numSections*sectionEntrySize))
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.Write(make([]byte, pos)); err != nil {
		return nil, err
	}
	var zero [8]byte
	for i, b := range e.small {
		entries = append(entries, entry{id: e.ids[i], crc: crc32.Checksum(b, castagnoli), off: pos, n: uint64(len(b)), count: e.counts[i]})
		if _, err := bw.Write(b); err != nil {
			return nil, err
		}
		pad := align8(len(b)) - len(b)
		if _, err := bw.Write(zero[:pad]); err != nil {
			return nil, err
		}
		pos += uint64(len(b) + pad)
	}
	// Hash ids last: streamed, checksummed on the way.
	crc := uint32(0)
	var buf []byte
	for _, h := range e.hashes {
		var b []byte
		if littleEndian {
			b = u32Bytes(h)
		} else {
			buf = buf[:0]
			for _, v := range h {
				buf = binary.LittleEndian.AppendUint32(buf, v)
			}
			b = buf
		}
		crc = crc32.Update(crc, castagnoli, b)
		if _, err := bw.Write(b); err != nil {
			return nil, err
		}
	}
	hn := 4 * e.nhash
	entries = append(entries, entry{id: secHashIDs, crc: crc, off: pos, n: hn, count: e.nhash})
	pad := align8(int(hn%8)) - int(hn%8)
	if _, err := bw.Write(zero[:pad]); err != nil {
		return nil, err
	}
	pos += hn + uint64(pad)
	size := pos + footerSize

	tab := make([]byte, numSections*sectionEntrySize)
	for i, en := range entries {
		b := tab[i*sectionEntrySize:]
		binary.LittleEndian.PutUint32(b[0:], en.id)
		binary.LittleEndian.PutUint32(b[4:], en.crc)
		binary.LittleEndian.PutUint64(b[8:], en.off)
		binary.LittleEndian.PutUint64(b[16:], en.n)
		binary.LittleEndian.PutUint64(b[24:], en.count)
	}
	hdr := make([]byte, headerSize)
	copy(hdr, cacheMagic)
	binary.LittleEndian.PutUint32(hdr[8:], CacheFormatVersion)
	binary.LittleEndian.PutUint64(hdr[16:], size)
	binary.LittleEndian.PutUint32(hdr[24:], numSections)
	binary.LittleEndian.PutUint32(hdr[28:], crc32.Checksum(tab, castagnoli))
	hcrc := crc32.Checksum(hdr[:60], castagnoli)
	binary.LittleEndian.PutUint32(hdr[60:], hcrc)

	foot := make([]byte, footerSize)
	binary.LittleEndian.PutUint32(foot[0:], hcrc)
	binary.LittleEndian.PutUint32(foot[4:], CacheFormatVersion)
	copy(foot[8:], cacheMagic)
	if _, err := bw.Write(foot); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	head = make([]byte, tableStart+len(tab))
	copy(head, hdr)
	copy(head[tableStart:], tab)
	return head, nil
}
