package hfhub

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigFromEnv(t *testing.T) {
	home := t.TempDir()
	hfHome := filepath.Join(home, "hf")
	os.MkdirAll(hfHome, 0o755)
	os.WriteFile(filepath.Join(hfHome, "token"), []byte("  hf_fromfile\r\n"), 0o600)
	other := filepath.Join(home, "other-token")
	os.WriteFile(other, []byte("hf_otherfile\n"), 0o600)

	for _, tc := range []struct {
		name               string
		env                map[string]string
		token, from, cache string
		endpoint           string
		offline            bool
		etagTO, downloadTO time.Duration
	}{
		{name: "defaults", env: map[string]string{"HOME": home}, cache: filepath.Join(home, ".cache", "huggingface", "hub"), endpoint: DefaultEndpoint},
		{name: "XDG", env: map[string]string{"HOME": home, "XDG_CACHE_HOME": "/xdg"}, cache: "/xdg/huggingface/hub", endpoint: DefaultEndpoint},
		{name: "HF_HOME token file", env: map[string]string{"HOME": home, "HF_HOME": hfHome}, token: "hf_fromfile", from: "the token file " + filepath.Join(hfHome, "token"), cache: filepath.Join(hfHome, "hub"), endpoint: DefaultEndpoint},
		{name: "HF_TOKEN wins", env: map[string]string{"HF_HOME": hfHome, "HF_TOKEN": "hf_env\n", "HUGGING_FACE_HUB_TOKEN": "hf_legacy"}, token: "hf_env", from: "HF_TOKEN", cache: filepath.Join(hfHome, "hub"), endpoint: DefaultEndpoint},
		{name: "legacy variable", env: map[string]string{"HF_HOME": hfHome, "HUGGING_FACE_HUB_TOKEN": "hf_legacy"}, token: "hf_legacy", from: "HUGGING_FACE_HUB_TOKEN", cache: filepath.Join(hfHome, "hub"), endpoint: DefaultEndpoint},
		{name: "HF_TOKEN_PATH", env: map[string]string{"HF_HOME": hfHome, "HF_TOKEN_PATH": other}, token: "hf_otherfile", from: "the token file " + other, cache: filepath.Join(hfHome, "hub"), endpoint: DefaultEndpoint},
		{name: "endpoint offline timeouts", env: map[string]string{"HF_HUB_CACHE": "~/c", "HOME": home, "HF_ENDPOINT": "http://mirror.local:8080/", "HF_HUB_OFFLINE": "yes", "HF_HUB_ETAG_TIMEOUT": "3", "HF_HUB_DOWNLOAD_TIMEOUT": "0.5"},
			cache: filepath.Join(home, "c"), endpoint: "http://mirror.local:8080", offline: true, etagTO: 3 * time.Second, downloadTO: 500 * time.Millisecond},
		{name: "TRANSFORMERS_OFFLINE", env: map[string]string{"HOME": home, "TRANSFORMERS_OFFLINE": "1"}, cache: filepath.Join(home, ".cache", "huggingface", "hub"), endpoint: DefaultEndpoint, offline: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ConfigFromEnv(env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Token.Reveal() != tc.token || cfg.TokenFrom != tc.from || cfg.CacheDir != tc.cache || cfg.Endpoint != tc.endpoint ||
				cfg.Offline != tc.offline || cfg.MetadataTimeout != tc.etagTO || cfg.ReadTimeout != tc.downloadTO {
				t.Errorf("got token %q from %q, cache %q, endpoint %q, offline %v, timeouts %v %v", cfg.Token.Reveal(), cfg.TokenFrom, cfg.CacheDir, cfg.Endpoint, cfg.Offline, cfg.MetadataTimeout, cfg.ReadTimeout)
			}
		})
	}
	for _, bad := range []map[string]string{
		{"HF_ENDPOINT": "huggingface.co"},
		{"HF_ENDPOINT": "https://user:pw@mirror"},
		{"HF_HUB_OFFLINE": "maybe"},
		{"HF_HUB_ETAG_TIMEOUT": "-1"},
		{"HF_HUB_DOWNLOAD_TIMEOUT": "ten"},
	} {
		bad["HOME"] = home
		if _, err := ConfigFromEnv(env(bad)); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
	if os.Geteuid() != 0 { // root reads any file
		unreadable := filepath.Join(home, "locked")
		os.WriteFile(unreadable, []byte("hf_x"), 0o000)
		if _, err := ConfigFromEnv(env(map[string]string{"HF_TOKEN_PATH": unreadable})); err == nil || !strings.Contains(err.Error(), unreadable) {
			t.Errorf("unreadable token file: %v", err)
		}
	}
}

func TestNoProxy(t *testing.T) {
	for _, tc := range []struct {
		list, url string
		bypass    bool
	}{
		{"", "https://huggingface.co/x", false},
		{"*", "https://huggingface.co/x", true},
		{"huggingface.co", "https://huggingface.co/x", true},
		{"huggingface.co", "https://cdn-lfs.huggingface.co/x", true},
		{".huggingface.co", "https://huggingface.co/x", true},
		{"*.hf.co", "https://cas-bridge.xethub.hf.co/x", true},
		{"gface.co", "https://huggingface.co/x", false},
		{"localhost, 10.0.0.0/8", "http://10.1.2.3:8080/x", true},
		{"127.0.0.1", "http://127.0.0.1:5000/x", true},
		{"mirror:8080", "http://mirror:8080/x", true},
		{"mirror:8080", "http://mirror:9090/x", false},
		{"mirror:443", "https://mirror/x", true},
		{"[::1]", "http://[::1]:80/x", true},
	} {
		u, _ := url.Parse(tc.url)
		if got := bypassProxy(tc.list, u); got != tc.bypass {
			t.Errorf("no_proxy %q, %s: bypass %v, want %v", tc.list, tc.url, got, tc.bypass)
		}
	}
	p := ProxyFromEnv(env(map[string]string{"HTTPS_PROXY": "proxy.corp:3128", "http_proxy": "http://p2:80", "NO_PROXY": "internal"}))
	for _, tc := range []struct{ url, want string }{
		{"https://huggingface.co/x", "http://proxy.corp:3128"},
		{"http://mirror/x", "http://p2:80"},
		{"https://internal/x", ""},
	} {
		u, _ := url.Parse(tc.url)
		got, err := p(u)
		if err != nil || (got == nil) != (tc.want == "") || (got != nil && got.String() != tc.want) {
			t.Errorf("%s: proxy %v %v, want %q", tc.url, got, err, tc.want)
		}
	}
	if ProxyFromEnv(env(nil)) != nil {
		t.Error("no variables: want no proxy function")
	}
}

// TestDownloadThroughProxy: with HTTP_PROXY set, every request (hub and
// CDN) goes through the proxy; NO_PROXY sends them direct.
func TestDownloadThroughProxy(t *testing.T) {
	h, data := testHub(t)
	var seen []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.String())
		r.RequestURI = ""
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	defer proxy.Close()
	cfg, err := ConfigFromEnv(env(map[string]string{"HF_ENDPOINT": h.URL, "HF_HUB_CACHE": t.TempDir(), "HTTP_PROXY": proxy.URL}))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Backoff = time.Millisecond
	res, err := New(cfg).Download(context.Background(), dsReq("traces.jsonl"))
	if err != nil || !bytes.Equal(readPtr(t, res.Files[0].Path), data) {
		t.Fatal(err)
	}
	if len(seen) != 3 || !strings.Contains(seen[2], h.CDNURL) {
		t.Fatalf("through the proxy: %v; want the API call, the HEAD and the CDN GET", seen)
	}
	seen = nil
	u, _ := url.Parse(h.URL)
	cfg, _ = ConfigFromEnv(env(map[string]string{"HF_ENDPOINT": h.URL, "HF_HUB_CACHE": t.TempDir(), "HTTP_PROXY": proxy.URL, "NO_PROXY": u.Hostname()}))
	if _, err := New(cfg).Download(context.Background(), dsReq("README.md")); err != nil || len(seen) != 0 {
		t.Fatalf("NO_PROXY: %v, proxied %v", err, seen)
	}
}

func TestProgressWriter(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	var b bytes.Buffer
	p := NewProgressWriter(&b, false)
	p.now = clock
	p.Start("traces.jsonl", 100<<20, 0)
	for range 4 {
		now = now.Add(5 * time.Second)
		p.Add(10 << 20)
	}
	now = now.Add(5 * time.Second)
	p.Add(60 << 20)
	p.Finish(nil)
	want := "hub: traces.jsonl: downloading 100.0 MiB\n" +
		"hub: traces.jsonl: 20.0 MiB / 100.0 MiB (20%), 2.0 MiB/s, ETA 40s\n" +
		"hub: traces.jsonl: 40.0 MiB / 100.0 MiB (40%), 2.0 MiB/s, ETA 30s\n" +
		"hub: traces.jsonl: 100.0 MiB in 25s (4.0 MiB/s)\n"
	if b.String() != want {
		t.Errorf("log lines:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	now = time.Unix(1000, 0)
	p = NewProgressWriter(&b, true)
	p.now = clock
	p.Start("tokenizer.json", 1000, 500)
	now = now.Add(time.Second)
	p.Add(250)
	p.Finish(errors.New("boom"))
	out := b.String()
	for _, w := range []string{"\r\x1b[Ktokenizer.json [############            ] 500 B / 1000 B (50%)",
		"750 B / 1000 B (75%), 250 B/s, ETA 1s", "\nhub: tokenizer.json: stopped at 750 B: boom\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("terminal output %q lacks %q", out, w)
		}
	}
}

// TestConsoleConfig: the environment's settings, a bar only on a
// terminal and without HF_HUB_DISABLE_PROGRESS_BARS, notes as lines on
// the writer, and a malformed setting named as the hub's.
func TestConsoleConfig(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct {
		name     string
		env      map[string]string
		terminal bool
		bar      bool
	}{
		{"terminal", map[string]string{"HOME": home}, true, true},
		{"pipe", map[string]string{"HOME": home}, false, false},
		{"bars disabled", map[string]string{"HOME": home, "HF_HUB_DISABLE_PROGRESS_BARS": "1"}, true, false},
	} {
		var b bytes.Buffer
		cfg, err := ConsoleConfig(env(tc.env), &b, tc.terminal)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want, _ := ConfigFromEnv(env(tc.env))
		if cfg.CacheDir != want.CacheDir || cfg.Endpoint != want.Endpoint || cfg.NoProgressBars != want.NoProgressBars {
			t.Errorf("%s: %+v, want the environment's %+v", tc.name, cfg, want)
		}
		pw, ok := cfg.Progress.(*ProgressWriter)
		if !ok || pw.w != &b || pw.terminal != tc.bar {
			t.Errorf("%s: progress %#v, want a writer on the buffer, bar %v", tc.name, cfg.Progress, tc.bar)
		}
		cfg.Logf("hub: %s %d", "note", 1)
		if b.String() != "hub: note 1\n" {
			t.Errorf("%s: notes %q", tc.name, b.String())
		}
	}
	_, err := ConsoleConfig(env(map[string]string{"HF_HUB_OFFLINE": "maybe"}), io.Discard, false)
	if err == nil || !strings.HasPrefix(err.Error(), "Hugging Face hub settings: ") || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Errorf("malformed setting: %v", err)
	}
}
