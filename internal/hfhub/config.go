package hfhub

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultEndpoint is the hub used when HF_ENDPOINT is not set.
const DefaultEndpoint = "https://huggingface.co"

// Secret holds a credential. It formats as "[redacted]" with every fmt
// verb, so a Config printed by mistake does not leak the token.
type Secret struct{ v string }

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{s} }

// Reveal returns the credential, for the one place that sends it.
func (s Secret) Reveal() string { return s.v }

// Empty reports whether no credential is held.
func (s Secret) Empty() bool { return s.v == "" }

// String returns "[redacted]" (or "" when empty).
func (s Secret) String() string {
	if s.v == "" {
		return ""
	}
	return "[redacted]"
}

// GoString is String, for %#v.
func (s Secret) GoString() string { return s.String() }

// Format prints String for every verb.
func (s Secret) Format(f fmt.State, _ rune) { fmt.Fprint(f, s.String()) }

// Config is what a Client needs. ConfigFromEnv fills it the way
// huggingface_hub reads its environment; the zero value of a field means
// its documented default.
type Config struct {
	// Endpoint is the hub's base URL (HF_ENDPOINT; default
	// https://huggingface.co).
	Endpoint string
	// CacheDir is the hub cache (see CacheDir).
	CacheDir string
	// Token is sent as a bearer token to the endpoint's host only, never
	// to a CDN or other host a download is redirected to. Empty: none.
	Token Secret
	// TokenFrom says where Token was read from ("HF_TOKEN", "the token
	// file /x/token"), for messages; TokenPath is the token file looked at.
	TokenFrom, TokenPath string
	// Offline forbids all network access (HF_HUB_OFFLINE=1): only the
	// cache is read.
	Offline bool
	// MetadataTimeout bounds one API or metadata request
	// (HF_HUB_ETAG_TIMEOUT seconds; default 10 s).
	MetadataTimeout time.Duration
	// ReadTimeout is how long a download may receive nothing before it is
	// cut and resumed (HF_HUB_DOWNLOAD_TIMEOUT seconds; default 10 s).
	ReadTimeout time.Duration
	// Proxy returns the proxy for a request URL, nil for none
	// (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY; see ProxyFromEnv).
	Proxy func(*url.URL) (*url.URL, error)
	// Retries is how often a request is retried after a 5xx, 408 or 429
	// answer or a network error (0: 5; negative: never). 4xx answers are
	// never retried.
	Retries int
	// Backoff is the first delay between retries, doubled up to 8 s
	// (0: 1 s).
	Backoff time.Duration
	// Progress receives the progress of each file download; nil: none.
	Progress Progress
	// NoProgressBars is HF_HUB_DISABLE_PROGRESS_BARS: the caller should
	// not set a Progress that draws a bar.
	NoProgressBars bool
	// Logf receives one line per event worth telling (what is downloaded,
	// a retry, a corrupt blob replaced); nil discards them.
	Logf func(format string, args ...any)
	// Transport replaces the HTTP transport (tests); nil builds one that
	// uses Proxy.
	Transport http.RoundTripper
}

// envBool parses a huggingface_hub boolean variable: 1/ON/YES/TRUE are
// true, ""/0/OFF/NO/FALSE false (any case); anything else is an error
// rather than a silent false.
func envBool(name, v string) (bool, error) {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "1", "ON", "YES", "TRUE":
		return true, nil
	case "", "0", "OFF", "NO", "FALSE":
		return false, nil
	}
	return false, fmt.Errorf("%s=%q: want 1/true/yes/on or 0/false/no/off", name, v)
}

func envSeconds(name, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(n > 0) {
		return 0, fmt.Errorf("%s=%q: want a positive number of seconds", name, v)
	}
	return time.Duration(n * float64(time.Second)), nil
}

// TokenPath returns the token file huggingface_hub reads: HF_TOKEN_PATH,
// else <HomeDir>/token.
func TokenPath(getenv func(string) string) string {
	if p := getenv("HF_TOKEN_PATH"); p != "" {
		return expandHome(p, getenv)
	}
	return filepath.Join(HomeDir(getenv), "token")
}

// cleanToken drops line breaks and surrounding blanks, as huggingface_hub
// does.
func cleanToken(s string) string {
	return strings.TrimSpace(strings.NewReplacer("\r", "", "\n", "").Replace(s))
}

// ConfigFromEnv builds a Config from the environment, as huggingface_hub
// reads it:
//
//   - HF_ENDPOINT: the hub (default https://huggingface.co);
//   - HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME, XDG_CACHE_HOME: the cache (CacheDir);
//   - HF_TOKEN, else HUGGING_FACE_HUB_TOKEN, else the file HF_TOKEN_PATH
//     (default <HF_HOME>/token, where `hf auth login` writes it): the token;
//   - HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) = 1: no network;
//   - HF_HUB_ETAG_TIMEOUT, HF_HUB_DOWNLOAD_TIMEOUT: timeouts in seconds;
//   - HF_HUB_DISABLE_PROGRESS_BARS: NoProgressBars;
//   - HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY (or lower case): proxies.
//
// A malformed value is an error naming the variable. An unreadable token
// file (other than a missing one) is an error too: running without the
// token the user set up would fail later with a misleading 401.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	cfg := Config{Endpoint: DefaultEndpoint, CacheDir: CacheDir(getenv), TokenPath: TokenPath(getenv)}
	var err error
	if e := getenv("HF_ENDPOINT"); e != "" {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return Config{}, fmt.Errorf("HF_ENDPOINT=%q: want http(s)://host[:port][/path] without credentials (e.g. https://huggingface.co)", e)
		}
		cfg.Endpoint = strings.TrimRight(e, "/")
	}
	if cfg.NoProgressBars, err = envBool("HF_HUB_DISABLE_PROGRESS_BARS", getenv("HF_HUB_DISABLE_PROGRESS_BARS")); err != nil {
		return Config{}, err
	}
	for _, name := range []string{"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"} {
		on, err := envBool(name, getenv(name))
		if err != nil {
			return Config{}, err
		}
		cfg.Offline = cfg.Offline || on
	}
	if cfg.MetadataTimeout, err = envSeconds("HF_HUB_ETAG_TIMEOUT", getenv("HF_HUB_ETAG_TIMEOUT")); err != nil {
		return Config{}, err
	}
	if cfg.ReadTimeout, err = envSeconds("HF_HUB_DOWNLOAD_TIMEOUT", getenv("HF_HUB_DOWNLOAD_TIMEOUT")); err != nil {
		return Config{}, err
	}
	for _, name := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if t := cleanToken(getenv(name)); t != "" {
			cfg.Token, cfg.TokenFrom = NewSecret(t), name
			break
		}
	}
	if cfg.Token.Empty() {
		b, rerr := os.ReadFile(cfg.TokenPath)
		switch {
		case rerr == nil:
			if t := cleanToken(string(b)); t != "" {
				cfg.Token, cfg.TokenFrom = NewSecret(t), "the token file "+cfg.TokenPath
			}
		case errors.Is(rerr, fs.ErrNotExist):
		default:
			var pe *fs.PathError
			if errors.As(rerr, &pe) {
				rerr = pe.Err // the path is named below
			}
			return Config{}, fmt.Errorf("read the Hugging Face token file %s: %v (fix its permissions, set HF_TOKEN, or point HF_TOKEN_PATH elsewhere)", cfg.TokenPath, rerr)
		}
	}
	cfg.Proxy = ProxyFromEnv(getenv)
	return cfg, nil
}

// ConsoleConfig is ConfigFromEnv for a command whose messages go to w (a
// person's terminal when terminal is true): the progress of each download
// drawn as a bar on a terminal unless HF_HUB_DISABLE_PROGRESS_BARS is set,
// as log lines otherwise, and the client's notes as lines on w. A
// malformed setting is an error saying it is one of the hub's.
func ConsoleConfig(getenv func(string) string, w io.Writer, terminal bool) (Config, error) {
	cfg, err := ConfigFromEnv(getenv)
	if err != nil {
		return Config{}, fmt.Errorf("Hugging Face hub settings: %w", err)
	}
	cfg.Progress = NewProgressWriter(w, terminal && !cfg.NoProgressBars)
	cfg.Logf = func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	return cfg, nil
}
