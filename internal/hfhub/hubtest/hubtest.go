// Package hubtest is a fake Hugging Face hub for tests: an httptest server
// speaking the parts of the hub protocol agentperf (and huggingface_hub)
// use, with a separate CDN server that LFS and Xet files redirect to, and
// faults to inject.
//
//   - GET /api/{datasets|models}/{org}/{name}/revision/{rev}: {"id", "sha",
//     "siblings": [{"rfilename"}]};
//   - HEAD and GET /[datasets/]{org}/{name}/resolve/{rev}/{path}: for a
//     file stored in git, 200 with the bytes, ETag = git blob SHA-1 and
//     X-Repo-Commit; for an LFS or Xet file, 302 to the CDN with
//     X-Linked-Etag = SHA-256, X-Linked-Size, X-Repo-Commit (and X-Xet-Hash
//     with a Link rel="xet-auth" for Xet files);
//   - the CDN serves GET /blobs/{sha256}?X-Sig=… with Range support and
//     records any Authorization header it receives (it must get none);
//   - gated repositories answer 401 (GatedRepo) without a token and 403
//     with a wrong one; unknown names answer 404 with X-Error-Code
//     RepoNotFound, RevisionNotFound or EntryNotFound.
package hubtest

import (
	"bufio"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// File is one file of a fake repository.
type File struct {
	// Data is the content.
	Data []byte
	// LFS serves the file through a redirect to the CDN (sha256 ETag).
	LFS bool
	// Xet is LFS plus the Xet headers.
	Xet bool
}

// Repo is a fake repository.
type Repo struct {
	// Kind is "datasets" or "models"; ID is "org/name".
	Kind, ID string
	// Commits maps a 40-hex commit to its files.
	Commits map[string]map[string]File
	// Refs maps branches and tags to commits.
	Refs map[string]string
	// Token, when set, makes the repository gated: requests need
	// "Authorization: Bearer <Token>".
	Token string
}

// Fault is an injected misbehaviour, consumed once per match.
type Fault struct {
	// Method ("GET", "HEAD") and Path (substring of the request path,
	// e.g. "/api/", "/resolve/", "/blobs/") select the requests; Host is
	// "hub" or "cdn" ("" = either).
	Method, Path, Host string
	// Status answers with this status instead (e.g. 503).
	Status int
	// CutAfter, when positive, sends the headers of the whole answer,
	// then this many body bytes, then closes the connection.
	CutAfter int64
	// Corrupt flips a byte of the body.
	Corrupt bool
	// IgnoreRange answers 200 with the whole file to a Range request.
	IgnoreRange bool
	// Hold, when set, delays the answer until it is closed.
	Hold <-chan struct{}
	// Stall, with CutAfter, keeps the connection open and silent after
	// the first CutAfter bytes until it is closed.
	Stall <-chan struct{}
	// Times is how many matching requests it applies to (0 = 1).
	Times int
}

// Request is one request the servers received.
type Request struct {
	Host, Method, Path, Range string
	Auth                      bool
}

// Hub is the fake hub and its CDN.
type Hub struct {
	// URL is the hub's base URL (HF_ENDPOINT); CDNURL the CDN's.
	URL, CDNURL string

	hub, cdn *httptest.Server
	mu       sync.Mutex
	repos    map[string]*Repo // kind/id
	blobs    map[string][]byte
	faults   []*Fault
	log      []Request
	cdnAuth  int
}

// New starts a fake hub and CDN; they stop at Close.
func New() *Hub {
	h := &Hub{repos: map[string]*Repo{}, blobs: map[string][]byte{}}
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	h.hub = httptest.NewServer(http.HandlerFunc(h.serveHub))
	h.URL, h.CDNURL = h.hub.URL, h.cdn.URL
	return h
}

// Close stops both servers.
func (h *Hub) Close() {
	h.hub.Close()
	h.cdn.Close()
}

// Add registers r (its LFS blobs go to the CDN).
func (h *Hub) Add(r *Repo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[r.Kind+"/"+r.ID] = r
	for _, files := range r.Commits {
		for _, f := range files {
			if f.LFS || f.Xet {
				h.blobs[SHA256(f.Data)] = f.Data
			}
		}
	}
}

// Inject adds faults.
func (h *Hub) Inject(fs ...Fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range fs {
		f := fs[i]
		if f.Times == 0 {
			f.Times = 1
		}
		h.faults = append(h.faults, &f)
	}
}

// Requests returns the requests received so far.
func (h *Hub) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Request(nil), h.log...)
}

// Count returns how many requests matched method and a path substring.
func (h *Hub) Count(method, pathPart string) int {
	n := 0
	for _, r := range h.Requests() {
		if (method == "" || r.Method == method) && strings.Contains(r.Path, pathPart) {
			n++
		}
	}
	return n
}

// Reset forgets the request log.
func (h *Hub) Reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = nil
}

// CDNAuthHeaders counts requests to the CDN that carried an Authorization
// header (a leaked token).
func (h *Hub) CDNAuthHeaders() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cdnAuth
}

// SHA256 returns the hex SHA-256 of b (an LFS file's ETag).
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// GitBlobSHA1 returns the git blob id of b (a git file's ETag).
func GitBlobSHA1(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func (h *Hub) record(host string, r *http.Request) *Fault {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = append(h.log, Request{Host: host, Method: r.Method, Path: r.URL.Path, Range: r.Header.Get("Range"), Auth: r.Header.Get("Authorization") != ""})
	if host == "cdn" && r.Header.Get("Authorization") != "" {
		h.cdnAuth++
	}
	for i, f := range h.faults {
		if (f.Method == "" || f.Method == r.Method) && strings.Contains(r.URL.Path, f.Path) && (f.Host == "" || f.Host == host) {
			f.Times--
			if f.Times <= 0 {
				h.faults = append(h.faults[:i], h.faults[i+1:]...)
			}
			return f
		}
	}
	return nil
}

func (h *Hub) serveHub(w http.ResponseWriter, r *http.Request) {
	f := h.record("hub", r)
	hold(f)
	if f != nil && f.Status != 0 {
		http.Error(w, "injected", f.Status)
		return
	}
	p := r.URL.Path
	if rest, ok := strings.CutPrefix(p, "/api/"); ok {
		h.serveAPI(w, r, rest)
		return
	}
	kind := "models"
	if rest, ok := strings.CutPrefix(p, "/datasets/"); ok {
		kind, p = "datasets", "/"+rest
	}
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 5) // org name resolve rev path
	if len(parts) != 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	repo, commit, ok := h.lookup(w, r, kind, parts[0]+"/"+parts[1], parts[3])
	if !ok {
		return
	}
	file, ok := repo.Commits[commit][parts[4]]
	if !ok {
		w.Header().Set("X-Repo-Commit", commit)
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	if file.LFS || file.Xet {
		sum := SHA256(file.Data)
		w.Header().Set("X-Linked-Etag", `"`+sum+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(file.Data)))
		w.Header().Set("ETag", `"`+GitBlobSHA1([]byte("pointer "+sum))+`"`)
		if file.Xet {
			w.Header().Set("X-Xet-Hash", sum)
			w.Header().Set("Link", fmt.Sprintf(`<%s/api/%s/%s/xet-read-token/%s>; rel="xet-auth"`, h.URL, kind, repo.ID, commit))
		}
		w.Header().Set("Location", h.CDNURL+"/blobs/"+sum+"?X-Sig=signed-"+sum[:8])
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+GitBlobSHA1(file.Data)+`"`)
	serveBytes(w, r, file.Data, f)
}

// lookup finds the repository and commit, answering the errors itself.
func (h *Hub) lookup(w http.ResponseWriter, r *http.Request, kind, id, rev string) (*Repo, string, bool) {
	h.mu.Lock()
	repo := h.repos[kind+"/"+id]
	h.mu.Unlock()
	if repo == nil {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, "Repository not found", http.StatusNotFound)
		return nil, "", false
	}
	if repo.Token != "" {
		auth := r.Header.Get("Authorization")
		switch {
		case auth == "":
			w.Header().Set("X-Error-Code", "GatedRepo")
			w.Header().Set("X-Error-Message", "Access to model "+id+" is restricted. You must have access to it and be authenticated to access it. Please log in.")
			http.Error(w, "gated", http.StatusUnauthorized)
			return nil, "", false
		case auth != "Bearer "+repo.Token:
			w.Header().Set("X-Error-Code", "GatedRepo")
			w.Header().Set("X-Error-Message", "Access to model "+id+" is restricted and you are not in the authorized list.")
			http.Error(w, "gated", http.StatusForbidden)
			return nil, "", false
		}
	}
	commit := rev
	if c, ok := repo.Refs[rev]; ok {
		commit = c
	}
	if _, ok := repo.Commits[commit]; !ok {
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, "Invalid rev id: "+rev, http.StatusNotFound)
		return nil, "", false
	}
	return repo, commit, true
}

func (h *Hub) serveAPI(w http.ResponseWriter, r *http.Request, rest string) {
	// {kind}/{org}/{name}/revision/{rev}
	parts := strings.SplitN(rest, "/", 5)
	if len(parts) != 5 || parts[3] != "revision" || (parts[0] != "datasets" && parts[0] != "models") {
		http.NotFound(w, r)
		return
	}
	repo, commit, ok := h.lookup(w, r, parts[0], parts[1]+"/"+parts[2], parts[4])
	if !ok {
		return
	}
	type sib struct {
		RFilename string `json:"rfilename"`
	}
	var sibs []sib
	var names []string
	for n := range repo.Commits[commit] {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		sibs = append(sibs, sib{n})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"_id": "x", "id": repo.ID, "sha": commit, "private": false, "gated": repo.Token != "", "siblings": sibs})
}

func (h *Hub) serveCDN(w http.ResponseWriter, r *http.Request) {
	f := h.record("cdn", r)
	hold(f)
	if f != nil && f.Status != 0 {
		http.Error(w, "injected", f.Status)
		return
	}
	sum, ok := strings.CutPrefix(r.URL.Path, "/blobs/")
	h.mu.Lock()
	data, found := h.blobs[sum]
	h.mu.Unlock()
	if !ok || !found || !strings.HasPrefix(r.URL.Query().Get("X-Sig"), "signed-") {
		http.Error(w, "AccessDenied", http.StatusForbidden)
		return
	}
	w.Header().Set("ETag", `"`+sum+`"`)
	serveBytes(w, r, data, f)
}

// serveBytes answers with data, honouring "Range: bytes=N-[M]" and the
// fault.
func serveBytes(w http.ResponseWriter, r *http.Request, data []byte, f *Fault) {
	start, end := int64(0), int64(len(data))-1
	status := http.StatusOK
	if rg := r.Header.Get("Range"); rg != "" && (f == nil || !f.IgnoreRange) {
		s, e, ok := strings.Cut(strings.TrimPrefix(rg, "bytes="), "-")
		n, err := strconv.ParseInt(s, 10, 64)
		if !ok || err != nil || n >= int64(len(data)) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(data)))
			http.Error(w, "range", http.StatusRequestedRangeNotSatisfiable)
			return
		}
		start = n
		if e != "" {
			if m, err := strconv.ParseInt(e, 10, 64); err == nil && m < end {
				end = m
			}
		}
		status = http.StatusPartialContent
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, len(data)))
	}
	body := data[start : end+1]
	if f != nil && f.Corrupt && len(body) > 0 {
		body = append([]byte(nil), body...)
		body[len(body)/2] ^= 0xff
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("Accept-Ranges", "bytes")
	if f != nil && f.CutAfter > 0 {
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic("hubtest: cannot hijack to cut the connection")
		}
		conn, buf, err := hj.Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		writeRaw(buf, status, w.Header(), body[:min(f.CutAfter, int64(len(body)))], r.Method == http.MethodHead)
		if f.Stall != nil {
			<-f.Stall
		}
		return
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

func hold(f *Fault) {
	if f != nil && f.Hold != nil {
		<-f.Hold
	}
}

func writeRaw(buf *bufio.ReadWriter, status int, hdr http.Header, body []byte, head bool) {
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	hdr.Set("Connection", "close")
	hdr.Write(buf)
	buf.WriteString("\r\n")
	if !head {
		buf.Write(body)
	}
	buf.Flush()
}
