package hfhub

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// ProxyFromEnv returns the proxy function the proxy variables describe, as
// curl and Python's HTTP clients read them: https_proxy/HTTPS_PROXY for
// https URLs, http_proxy/HTTP_PROXY for http URLs, all_proxy/ALL_PROXY for
// either when the specific one is unset (lower case first). no_proxy/NO_PROXY
// is a comma-separated list of hosts (a name also matches its
// subdomains; a leading "." or "*." is allowed), IP addresses, CIDR ranges,
// each optionally with ":port", or "*" for every host. A proxy given
// without a scheme is an http:// proxy. Unlike Go's
// http.ProxyFromEnvironment, loopback hosts are proxied unless listed, and
// the variables come from getenv.
func ProxyFromEnv(getenv func(string) string) func(*url.URL) (*url.URL, error) {
	get := func(names ...string) string {
		for _, n := range names {
			if v := strings.TrimSpace(getenv(n)); v != "" {
				return v
			}
		}
		return ""
	}
	https := get("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")
	http := get("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY")
	noProxy := get("no_proxy", "NO_PROXY")
	if https == "" && http == "" {
		return nil
	}
	return func(u *url.URL) (*url.URL, error) {
		p := http
		if u.Scheme == "https" {
			p = https
		}
		if p == "" || bypassProxy(noProxy, u) {
			return nil, nil
		}
		if !strings.Contains(p, "://") {
			p = "http://" + p
		}
		pu, err := url.Parse(p)
		if err != nil || pu.Host == "" {
			// The value may hold credentials: do not repeat it.
			return nil, fmt.Errorf("the proxy variable for %s URLs is not a URL (want http://host:port)", u.Scheme)
		}
		return pu, nil
	}
}

// bypassProxy reports whether u's host matches the no_proxy list.
func bypassProxy(list string, u *url.URL) bool {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	host = strings.ToLower(host)
	ip := net.ParseIP(host)
	for _, e := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' }) {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "*" {
			return true
		}
		if _, cidr, err := net.ParseCIDR(e); err == nil {
			if ip != nil && cidr.Contains(ip) {
				return true
			}
			continue
		}
		eh, ep := e, ""
		if h, p, err := net.SplitHostPort(e); err == nil {
			eh, ep = h, p
		}
		eh = strings.TrimPrefix(strings.Trim(eh, "[]"), "*")
		if ep != "" && ep != port {
			continue
		}
		if eip := net.ParseIP(eh); eip != nil {
			if ip != nil && eip.Equal(ip) {
				return true
			}
			continue
		}
		eh = strings.TrimPrefix(eh, ".")
		if eh != "" && (host == eh || strings.HasSuffix(host, "."+eh)) {
			return true
		}
	}
	return false
}
