package hfhub

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Errors a caller can match with errors.Is.
var (
	// ErrOffline: HF_HUB_OFFLINE is set and the cache lacks what was asked.
	ErrOffline = errors.New("HF_HUB_OFFLINE is set")
	// ErrUnreachable: the hub could not be reached (network, DNS, proxy,
	// or 5xx answers after every retry).
	ErrUnreachable = errors.New("the Hugging Face hub cannot be reached")
	// ErrAuth: the hub answered 401 or 403 (gated or private repository,
	// missing or refused token).
	ErrAuth = errors.New("the Hugging Face hub refused access")
	// ErrNotFound: the repository, revision or file does not exist (404,
	// or a file missing from the repository's listing).
	ErrNotFound = errors.New("not found on the Hugging Face hub")
	// ErrCorrupt: downloaded bytes did not match the hub's size or
	// checksum, again after a fresh download.
	ErrCorrupt = errors.New("download does not match the hub's checksum")
	// ErrDiskFull: the cache's file system is full (or over quota).
	ErrDiskFull = errors.New("no space left in the hub cache")
)

// HTTPError is a 4xx answer of the hub (5xx answers are retried and end
// as ErrUnreachable). It matches ErrAuth for 401/403 and ErrNotFound for
// 404. Its text names the request as sent (without a signed URL's query)
// and what to do; it never holds the token.
type HTTPError struct {
	// Status is the HTTP status; Code and Message are the hub's
	// X-Error-Code and X-Error-Message headers ("" when absent).
	Status        int
	Code, Message string
	// Method and URL are the request (query and fragment removed).
	Method, URL string
	// What is the object asked for ("dataset org/name@main", "file x of …").
	What string
	// Page is the repository's page on the hub, where gated terms are
	// accepted.
	Page string
	// TokenSent says whether a token went with the request, TokenFrom where
	// it came from, TokenPath the token file that was looked at.
	TokenSent            bool
	TokenFrom, TokenPath string
}

func (e *HTTPError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: the hub answered %d %s", e.What, e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Message != "" && len(e.Message) < 300 {
		fmt.Fprintf(&b, " %q", e.Message)
	}
	fmt.Fprintf(&b, " to %s %s", e.Method, e.URL)
	switch {
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		if e.TokenSent {
			fmt.Fprintf(&b, "; the token from %s was not accepted for it: check that the token is valid and that its account has been granted access (gated repositories are requested on %s)", e.TokenFrom, e.Page)
		} else {
			fmt.Fprintf(&b, "; no token was sent, and the repository is gated or private (or does not exist): request access on %s, then set HF_TOKEN or write the token to %s (HF_TOKEN_PATH; `hf auth login` writes it there)", e.Page, e.TokenPath)
		}
	case e.Status == http.StatusNotFound:
		b.WriteString("; check the name as sent (organisation, name, revision and file are case-sensitive)")
	}
	return b.String()
}

// Is matches ErrAuth (401, 403) and ErrNotFound (404).
func (e *HTTPError) Is(target error) bool {
	switch target {
	case ErrAuth:
		return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	}
	return false
}

// stripQuery returns u without its query and fragment: signed CDN URLs
// carry credentials there.
func stripQuery(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i]
	}
	return u
}
