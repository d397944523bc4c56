package hfhub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentperf/agentperf/internal/numfmt"
)

// Request names files of a repository to have in the cache.
type Request struct {
	// Kind is KindDataset or KindModel; Repo is "org/name".
	Kind, Repo string
	// Revision is a branch, tag or 40-hex commit ("" = "main").
	Revision string
	// Commit, when the caller already knows what Revision names (from
	// List), saves asking the hub again.
	Commit string
	// Files are the paths to fetch. Each must exist in the repository.
	Files []string
	// Refresh asks the hub what Revision names even when the cache has a
	// ref for it (a branch may have moved). Without it a cached ref is
	// trusted and a complete cached snapshot costs no request at all.
	Refresh bool
	// Verify hashes cached files against their ETags and downloads those
	// that do not match again. Fresh downloads are always verified.
	Verify bool
}

// Result says where the files are and how they got there.
type Result struct {
	// Commit is the snapshot's commit; Dir its folder in the cache.
	Commit, Dir string
	// Files are the requested files, in order.
	Files []FileResult
	// FromCache is true when no request was sent.
	FromCache bool
}

// FileResult is one file of a Result.
type FileResult struct {
	// Name is the path in the repository; Path the file in the snapshot.
	Name, Path string
	// Size is the file's size in bytes.
	Size int64
	// Downloaded is true when bytes were fetched for it by this call;
	// Resumed counts the bytes that an earlier, interrupted download had
	// already written.
	Downloaded bool
	Resumed    int64
	// Repaired is true when a cached copy failed verification and was
	// replaced.
	Repaired bool

	asked bool // the hub was asked about it
}

// Downloaded returns the files that were fetched by the call.
func (r *Result) Downloaded() []FileResult {
	var out []FileResult
	for _, f := range r.Files {
		if f.Downloaded {
			out = append(out, f)
		}
	}
	return out
}

// repoState is one Download's view of a repository in the cache.
type repoState struct {
	t       target
	storage string // <cache>/<kind>--org--name
	commit  string
}

func (s *repoState) pointer(file string) string {
	return filepath.Join(s.storage, "snapshots", s.commit, filepath.FromSlash(file))
}

// Download makes req's files present in the cache and returns where they
// are. With a complete cached snapshot of the revision (its ref, or a
// commit revision, and every file) it sends no request. Offline, the cache
// is all there is. Otherwise it asks the hub for the revision's commit
// and listing, and downloads each missing file (see the package comment).
// The ref of a branch or tag is written once every file is in place.
func (c *Client) Download(ctx context.Context, req Request) (*Result, error) {
	rev := req.Revision
	if rev == "" {
		rev = "main"
	}
	if err := validate(req.Kind, req.Repo, rev); err != nil {
		return nil, err
	}
	if req.Commit != "" && !IsCommit(req.Commit) {
		return nil, fmt.Errorf("hub download: commit %q is not 40-hex", req.Commit)
	}
	if len(req.Files) == 0 {
		return nil, errors.New("hub download: no files asked for")
	}
	for _, f := range req.Files {
		if err := ValidFile(f); err != nil {
			return nil, err
		}
	}
	t := target{kind: req.Kind, repo: req.Repo, rev: rev}
	st := &repoState{t: t, storage: RepoDir(c.cfg.CacheDir, req.Kind, req.Repo)}

	// What the cache has.
	cachedCommit := req.Commit
	if cachedCommit == "" && IsCommit(rev) {
		cachedCommit = rev
	}
	var refNote string
	if cachedCommit == "" {
		_, cm, _, err := Snapshot(c.cfg.CacheDir, req.Kind, req.Repo, rev)
		switch {
		case err == nil:
			cachedCommit = cm
		case errors.Is(err, ErrNotCached):
			refNote = fmt.Sprintf("no ref %s", filepath.Join(st.storage, "refs", filepath.FromSlash(rev)))
		default:
			if c.cfg.Offline {
				return nil, err
			}
			c.logf("hub: %v; asking the hub again", err)
			refNote = err.Error()
		}
	}
	var missing []string
	if cachedCommit != "" {
		st.commit = cachedCommit
		for _, f := range req.Files {
			if !exists(st.pointer(f)) {
				missing = append(missing, st.pointer(f))
			}
		}
	}
	cacheComplete := cachedCommit != "" && len(missing) == 0
	useCache := func() (*Result, error) {
		// Verifying may need to download a damaged file again.
		st.commit = cachedCommit
		res, err := c.finish(ctx, st, req, !c.cfg.Offline)
		if err == nil {
			c.recordRef(st, rev)
		}
		return res, err
	}
	if cacheComplete && (!req.Refresh || IsCommit(rev) || c.cfg.Offline) {
		return useCache()
	}
	if c.cfg.Offline {
		why := refNote
		if why == "" {
			why = "missing " + strings.Join(missing, ", ")
		}
		return nil, fmt.Errorf("%s is not in the hub cache %s (%s) and %w, so nothing is downloaded: pre-download it where the hub is reachable, into the same cache (HF_HUB_CACHE=%s %s), or unset HF_HUB_OFFLINE",
			t, c.cfg.CacheDir, why, ErrOffline, c.cfg.CacheDir, fetchCommand(t))
	}

	// Ask the hub.
	commit := req.Commit
	if commit == "" {
		info, err := c.List(ctx, req.Kind, req.Repo, rev)
		if err != nil {
			if cacheComplete && errors.Is(err, ErrUnreachable) {
				c.logf("hub: %v; using the cached snapshot %s of %s", err, cachedCommit, t)
				return useCache()
			}
			return nil, c.advise(err, t, cacheComplete)
		}
		commit = info.Commit
		have := make(map[string]bool, len(info.Files))
		for _, f := range info.Files {
			have[f] = true
		}
		for _, f := range req.Files {
			if !have[f] {
				return nil, fmt.Errorf("%s: %w: the repository has no file %q at commit %s; it holds: %s", t, ErrNotFound, f, commit, listSome(info.Files, 20))
			}
		}
	}
	st.commit = commit
	res, err := c.finish(ctx, st, req, true)
	if err != nil {
		return nil, c.advise(err, t, false)
	}
	res.FromCache = false
	c.recordRef(st, rev)
	return res, nil
}

// recordRef writes refs/<rev> for a branch or tag when it does not hold
// st.commit yet. It is best effort, as in huggingface_hub: a read-only
// shared cache still serves its snapshots; the next run just asks the hub
// again.
func (c *Client) recordRef(st *repoState, rev string) {
	if IsCommit(rev) {
		return
	}
	p := filepath.Join(st.storage, "refs", filepath.FromSlash(rev))
	if err := writeRef(p, st.commit); err != nil {
		c.logf("hub: warning: %s: cannot record ref %s → %s: %v (the next run asks the hub again)", st.t, p, st.commit, err)
	}
}

// advise adds the way out to an error reaching the hub.
func (c *Client) advise(err error, t target, cached bool) error {
	if errors.Is(err, ErrUnreachable) && !cached {
		return fmt.Errorf("%w\n%s is not in the hub cache %s and the hub %s cannot be reached: pre-download it where the hub is reachable, into the same cache (HF_HUB_CACHE=%s %s), and set HF_HUB_OFFLINE=1 here; or fix the network or proxy settings (HTTPS_PROXY, NO_PROXY)",
			err, t, c.cfg.CacheDir, c.cfg.Endpoint, c.cfg.CacheDir, fetchCommand(t))
	}
	return err
}

// listSome joins the first n names.
func listSome(names []string, n int) string {
	if len(names) == 0 {
		return "no files"
	}
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(", … (%d more)", len(names)-n)
}

// finish makes every file of req present under st.commit (verifying the
// cached ones when asked), downloading when network is true.
func (c *Client) finish(ctx context.Context, st *repoState, req Request, network bool) (*Result, error) {
	res := &Result{Commit: st.commit, Dir: filepath.Join(st.storage, "snapshots", st.commit), FromCache: true}
	for _, f := range req.Files {
		fr, err := c.ensureFile(ctx, st, f, req.Verify, network)
		if err != nil {
			return nil, err
		}
		if fr.asked {
			res.FromCache = false
		}
		res.Files = append(res.Files, fr)
	}
	return res, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ensureFile makes one file present in the snapshot.
func (c *Client) ensureFile(ctx context.Context, st *repoState, file string, verify, network bool) (FileResult, error) {
	t := st.t
	t.file = file
	ptr := st.pointer(file)
	fr := FileResult{Name: file, Path: ptr}
	if fi, err := os.Stat(ptr); err == nil {
		fr.Size = fi.Size()
		if !verify {
			return fr, nil
		}
		ok, etag, err := verifyPointer(ptr)
		if err != nil {
			return fr, fmt.Errorf("%s: verify %s: %w", t, ptr, err)
		}
		if ok {
			return fr, nil
		}
		c.logf("hub: %s: the cached blob %s does not match its checksum (etag %s): downloading it again", t, resolved(ptr), etag)
		if !network {
			return fr, fmt.Errorf("%s: %w: the cached blob %s is damaged, and the hub may not be used to fetch it again (%v): delete it and download it where the hub is reachable", t, ErrCorrupt, resolved(ptr), ErrOffline)
		}
		if target := resolved(ptr); target != ptr {
			os.Remove(target)
		}
		os.Remove(ptr)
		fr.Repaired = true
	} else if !network {
		return fr, fmt.Errorf("%s: %s is missing", t, ptr)
	}

	fr.asked = true
	meta, err := c.head(ctx, t, st.commit)
	if err != nil {
		return fr, err
	}
	fr.Size = meta.size
	blobs := filepath.Join(st.storage, "blobs")
	blob := filepath.Join(blobs, meta.etag)
	for _, d := range []string{blobs, filepath.Dir(ptr)} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			return fr, fmt.Errorf("%s: %w", t, err)
		}
	}
	// The blob may be in the cache already (another revision, another
	// process).
	if fi, err := os.Stat(blob); err == nil && fi.Size() == meta.size && (!verify || verifyBlob(blob, meta.etag, meta.size) == nil) {
		return fr, link(blob, ptr)
	}
	locks := filepath.Join(c.cfg.CacheDir, ".locks", RepoFolder(t.kind, t.repo))
	if err := os.MkdirAll(locks, 0o777); err != nil {
		return fr, fmt.Errorf("%s: %w", t, err)
	}
	lockPath := filepath.Join(locks, meta.etag+".lock")
	l, err := lock(ctx, lockPath, func() {
		c.logf("hub: %s: another download of it is running; waiting for it (lock %s)", t, lockPath)
	})
	if err != nil {
		return fr, fmt.Errorf("%s: %w", t, err)
	}
	defer l.unlock()
	if fi, err := os.Stat(blob); err == nil && fi.Size() == meta.size && (!fr.Repaired || verifyBlob(blob, meta.etag, meta.size) == nil) {
		// Downloaded (and verified) by whoever held the lock.
		return fr, link(blob, ptr)
	}
	os.Remove(blob) // a damaged blob of the wrong size, or one that failed verification
	if meta.xet {
		c.logf("hub: %s is stored with Xet: downloading it through the hub's HTTP bridge", t)
	}
	resumed, err := c.fetchBlob(ctx, t, meta, blob)
	if err != nil {
		return fr, err
	}
	fr.Downloaded, fr.Resumed = true, resumed
	return fr, link(blob, ptr)
}

// resolved returns the blob a snapshot symlink points at (or p itself).
func resolved(p string) string {
	if tgt, err := os.Readlink(p); err == nil {
		if !filepath.IsAbs(tgt) {
			tgt = filepath.Join(filepath.Dir(p), tgt)
		}
		return filepath.Clean(tgt)
	}
	return p
}

// verifyPointer checks the blob behind a snapshot file against its name
// (its ETag). A file whose blob name is no checksum (or a plain file, as
// on file systems without symlinks) passes: there is nothing to check.
func verifyPointer(ptr string) (ok bool, etag string, err error) {
	blob := resolved(ptr)
	etag = filepath.Base(blob)
	if blob == ptr {
		return true, etag, nil
	}
	fi, err := os.Stat(blob)
	if err != nil {
		return false, etag, err
	}
	err = verifyBlob(blob, etag, fi.Size())
	if errors.Is(err, ErrCorrupt) {
		return false, etag, nil
	}
	return err == nil, etag, err
}

// verifyBlob hashes a blob file and compares it with its ETag.
func verifyBlob(p, etag string, size int64) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	v := newVerifier(etag, size)
	n, err := io.Copy(v, f)
	if err != nil {
		return err
	}
	return v.check(n)
}

// link points the snapshot file ptr at blob with a relative symlink
// (replaced atomically), or copies the blob where symlinks are refused.
func link(blob, ptr string) error {
	rel, err := filepath.Rel(filepath.Dir(ptr), blob)
	if err != nil {
		rel = blob
	}
	if cur, err := os.Readlink(ptr); err == nil && cur == rel {
		return nil
	}
	tmp := ptr + ".tmp-" + randHex()
	if err := os.Symlink(rel, tmp); err != nil {
		// No symlinks here: copy, as huggingface_hub does.
		if cerr := copyFile(blob, tmp); cerr != nil {
			return fmt.Errorf("link %s: %v; copy: %w", ptr, err, cerr)
		}
	}
	if err := os.Rename(tmp, ptr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("link %s: %w", ptr, err)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	return out.Close()
}

func randHex() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeRef writes a ref file atomically (readers never see half a commit).
func writeRef(p, commit string) error {
	if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == commit {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return err
	}
	tmp := p + ".tmp-" + randHex()
	if err := os.WriteFile(tmp, []byte(commit), 0o666); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// errStalled cuts a download that received nothing for ReadTimeout.
var errStalled = errors.New("no data received within the read timeout (HF_HUB_DOWNLOAD_TIMEOUT)")

// fetchBlob downloads meta's bytes into blob, through blob.incomplete,
// under the caller's lock. A partial .incomplete from an earlier run is
// resumed with a Range request; a cut connection is resumed the same way
// (the retry count starts again whenever bytes arrived). The bytes are
// checked against the size and the ETag before the rename into place; a
// mismatch throws the partial file away and starts once more, then fails
// with ErrCorrupt. On a full disk the partial file is kept, so that a
// re-run after freeing space resumes it, and the error says where it is.
func (c *Client) fetchBlob(ctx context.Context, t target, meta fileMeta, blob string) (resumed int64, err error) {
	inc := blob + ".incomplete"
	f, err := os.OpenFile(inc, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return 0, c.writeErr(t, inc, 0, meta.size, err)
	}
	closed := false
	defer func() {
		if !closed {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	have := fi.Size()
	if have > meta.size {
		have = 0
	}
	if free, ok := freeBytes(filepath.Dir(blob)); ok && free < meta.size-have {
		return 0, fmt.Errorf("%s: %w: it needs %s more and %s has %s free; free some space (or point HF_HUB_CACHE elsewhere) and run again",
			t, ErrDiskFull, numfmt.Bytes(meta.size-have), filepath.Dir(blob), numfmt.Bytes(free))
	}
	resumed = have
	name := t.file
	if c.cfg.Progress != nil {
		c.cfg.Progress.Start(name, meta.size, have)
	}
	finish := func(err error) {
		if c.cfg.Progress != nil {
			c.cfg.Progress.Finish(err)
		}
	}
	fails, corrupt, refreshed := 0, 0, false
	for {
		if err := ctx.Err(); err != nil {
			finish(err)
			return resumed, err
		}
		v := newVerifier(meta.etag, meta.size)
		if have > 0 {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				finish(err)
				return resumed, err
			}
			if n, err := io.CopyN(v, f, have); err != nil || n != have {
				have = 0 // unreadable partial file: start again
				v = newVerifier(meta.etag, meta.size)
			}
		}
		if err := f.Truncate(have); err != nil {
			finish(err)
			return resumed, c.writeErr(t, inc, have, meta.size, err)
		}
		if _, err := f.Seek(have, io.SeekStart); err != nil {
			finish(err)
			return resumed, err
		}
		var got int64
		var terr error
		if have < meta.size {
			got, terr = c.transfer(ctx, meta, have, f, v)
		}
		have += got
		var we *writeError
		switch {
		case errors.As(terr, &we):
			finish(we.err)
			return resumed, c.writeErr(t, inc, have, meta.size, we.err)
		case terr != nil && ctx.Err() != nil:
			finish(ctx.Err())
			return resumed, ctx.Err()
		case terr != nil:
			var he *HTTPError
			if errors.As(terr, &he) && !refreshed && !c.sameHost(he.URL) {
				// A signed CDN URL may have expired (a long resume): ask the
				// hub for a fresh one, once.
				refreshed = true
				c.logf("hub: %s: %s answered %d; asking the hub for a fresh download URL", t, he.URL, he.Status)
				m, err := c.head(ctx, t, meta.commit)
				if err != nil {
					finish(err)
					return resumed, err
				}
				if m.etag != meta.etag || m.size != meta.size {
					err := fmt.Errorf("%s changed on the hub during the download (etag %s → %s)", t, meta.etag, m.etag)
					finish(err)
					return resumed, err
				}
				meta.url = m.url
				continue
			}
			if he != nil {
				he.What = t.String()
				he.Page = c.page(t)
				finish(terr)
				return resumed, terr
			}
			var rs *restart
			if errors.As(terr, &rs) {
				if c.cfg.Progress != nil {
					c.cfg.Progress.Add(-have)
				}
				have, resumed = 0, 0
			}
			var hdr http.Header
			var re *retryErr
			if errors.As(terr, &re) {
				hdr = re.header
			}
			if got > 0 {
				fails = 0
			}
			fails++
			if fails > c.cfg.Retries {
				finish(terr)
				return resumed, fmt.Errorf("%w: download %s: %v (%s of %s kept in %s; a re-run resumes it)", ErrUnreachable, t, terr, numfmt.Bytes(have), numfmt.Bytes(meta.size), inc)
			}
			d := c.backoff(fails, hdr)
			c.logf("hub: %s: %v at %s of %s; resuming in %s (retry %d of %d)", t, terr, numfmt.Bytes(have), numfmt.Bytes(meta.size), d, fails, c.cfg.Retries)
			if err := sleep(ctx, d); err != nil {
				finish(err)
				return resumed, err
			}
			continue
		}
		if cerr := v.check(have); cerr != nil {
			corrupt++
			c.logf("hub: %s: %v; discarding the %s downloaded", t, cerr, numfmt.Bytes(have))
			if c.cfg.Progress != nil {
				c.cfg.Progress.Add(-have)
			}
			have, resumed = 0, 0
			if corrupt > 1 {
				f.Close()
				closed = true
				os.Remove(inc)
				err := fmt.Errorf("%s: %w, twice: %v; the hub or something between it and this machine (a proxy, a CDN) serves other bytes than the hub's checksum says", t, ErrCorrupt, cerr)
				finish(err)
				return 0, err
			}
			continue
		}
		if err := f.Sync(); err != nil {
			finish(err)
			return resumed, c.writeErr(t, inc, have, meta.size, err)
		}
		if err := f.Close(); err != nil {
			closed = true
			finish(err)
			return resumed, c.writeErr(t, inc, have, meta.size, err)
		}
		closed = true
		if err := os.Rename(inc, blob); err != nil {
			finish(err)
			return resumed, fmt.Errorf("%s: move %s into place: %w", t, inc, err)
		}
		syncDir(filepath.Dir(blob))
		finish(nil)
		return resumed, nil
	}
}

// sameHost reports whether u is on the endpoint's host.
func (c *Client) sameHost(u string) bool {
	pu, err := url.Parse(u)
	return err == nil && strings.EqualFold(pu.Host, c.host)
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// writeErr explains a failed write to the partial file.
func (c *Client) writeErr(t target, inc string, have, size int64, err error) error {
	if isDiskFull(err) {
		return fmt.Errorf("%s: %w (%v): %s of %s written to %s and kept there, so that a run after freeing space resumes it (delete it to free the space instead); nothing was added to the cache",
			t, ErrDiskFull, err, numfmt.Bytes(have), numfmt.Bytes(size), inc)
	}
	return fmt.Errorf("%s: write %s: %w", t, inc, err)
}

// writeError marks a failure of the local write (not retried).
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// restart says the partial file must be thrown away (the server ignored
// the range, or answered another one).
type restart struct{ why string }

func (e *restart) Error() string { return e.why }

// transfer sends one GET for the bytes from offset have and copies them to
// w and v. It follows redirects (dropping the token when the host
// changes) and cuts the connection when nothing arrives for ReadTimeout.
func (c *Client) transfer(ctx context.Context, meta fileMeta, have int64, w io.Writer, v *verifier) (int64, error) {
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchdog := time.AfterFunc(c.cfg.ReadTimeout, func() { cancel(errStalled) })
	defer watchdog.Stop()

	u := meta.url
	var resp *http.Response
	for hops := 0; ; hops++ {
		req, sent, err := c.newRequest(rctx, http.MethodGet, u)
		if err != nil {
			return 0, err
		}
		if have > 0 {
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
		}
		r, err := c.hc.Do(req)
		if err != nil {
			if cause := context.Cause(rctx); cause == errStalled {
				return 0, errStalled
			}
			return 0, cleanURLError(err)
		}
		if r.StatusCode >= 300 && r.StatusCode < 400 && r.Header.Get("Location") != "" && hops < 10 {
			r.Body.Close()
			if u, err = resolveLocation(u, r.Header.Get("Location")); err != nil {
				return 0, err
			}
			continue
		}
		if r.StatusCode >= 400 && !retryable(r.StatusCode) {
			r.Body.Close()
			return 0, &HTTPError{Status: r.StatusCode, Code: r.Header.Get("X-Error-Code"), Message: r.Header.Get("X-Error-Message"),
				Method: http.MethodGet, URL: stripQuery(u), TokenSent: sent, TokenFrom: c.cfg.TokenFrom, TokenPath: c.cfg.TokenPath}
		}
		resp = r
		break
	}
	defer resp.Body.Close()
	switch {
	case retryable(resp.StatusCode):
		return 0, &retryErr{status: resp.StatusCode, header: resp.Header}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		return 0, &restart{"the hub refused to resume (416 Range Not Satisfiable); starting again"}
	case have > 0 && resp.StatusCode == http.StatusOK:
		return 0, &restart{"the server ignored the Range request; starting again"}
	case resp.StatusCode == http.StatusPartialContent:
		start, _, total, err := ParseContentRange(resp.Header.Get("Content-Range"))
		if err != nil || start != have || (total >= 0 && total != meta.size) {
			return 0, &restart{fmt.Sprintf("the server answered Content-Range %q to a request for bytes %d-; starting again", resp.Header.Get("Content-Range"), have)}
		}
	case resp.StatusCode != http.StatusOK:
		return 0, fmt.Errorf("GET %s: unexpected %d %s", stripQuery(u), resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	var dst io.Writer = w
	if c.wrapWriter != nil {
		dst = c.wrapWriter(w)
	}
	buf := make([]byte, 256<<10)
	var n int64
	limit := meta.size - have // never write past the file's size
	for {
		k, rerr := resp.Body.Read(buf)
		if k > 0 {
			watchdog.Reset(c.cfg.ReadTimeout)
			if int64(k) > limit-n {
				k = int(limit - n)
				rerr = errTooLong
			}
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return n, &writeError{werr}
			}
			v.Write(buf[:k])
			n += int64(k)
			if c.cfg.Progress != nil {
				c.cfg.Progress.Add(int64(k))
			}
		}
		switch {
		case rerr == io.EOF:
			if n < limit {
				return n, fmt.Errorf("connection closed after %s of %s (%w)", numfmt.Bytes(have+n), numfmt.Bytes(meta.size), io.ErrUnexpectedEOF)
			}
			return n, nil
		case rerr == errTooLong:
			return n, nil // check() reports the mismatch if the content is wrong
		case rerr != nil:
			if cause := context.Cause(rctx); cause == errStalled {
				return n, errStalled
			}
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			return n, cleanURLError(rerr)
		}
	}
}

var errTooLong = errors.New("more bytes than the file's size")
