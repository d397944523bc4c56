package replay

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
)

// Credentials in the server URL.
//
// A URL such as http://user:password@host:8000 is honoured the way curl and
// net/http honour it: the requests carry "Authorization: Basic
// base64(user:password)", and the URL itself is used (and shown) without the
// user info. Because Basic auth and a bearer token are both the one
// Authorization header, a URL with user info together with Config.APIKey or
// an Authorization entry in Config.Headers is refused by Validate instead of
// silently sending one of them.

// URLCredentials splits the user info out of a server URL: it returns the
// URL without it and the Authorization header value it stands for ("Basic
// …"), or raw and "" when the URL has none. The error is url.Parse's.
func URLCredentials(raw string) (clean, authorization string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return raw, "", err
	}
	if u.User == nil {
		return raw, "", nil
	}
	pass, _ := u.User.Password()
	authorization = "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass))
	u.User = nil
	return u.String(), authorization, nil
}

// hasAuthorization reports whether h sets Authorization (any case).
func hasAuthorization(h map[string]string) bool {
	for k := range h {
		if strings.EqualFold(strings.TrimSpace(k), "Authorization") {
			return true
		}
	}
	return false
}

// validateCredentials refuses a URL with user info when another setting
// provides the Authorization header too.
func (c *Config) validateCredentials() error {
	u, err := url.Parse(c.URL)
	if err != nil || u.User == nil {
		return nil
	}
	switch {
	case c.APIKey != "":
		return fmt.Errorf("%s carries user:password (sent as Basic auth) and Config.APIKey is set (sent as a bearer token): both would be the Authorization header; set one of them", u.Redacted())
	case hasAuthorization(c.Headers):
		return fmt.Errorf("%s carries user:password (sent as Basic auth) and Config.Headers set Authorization too; set one of them", u.Redacted())
	}
	return nil
}

// moveURLCredentials turns user info in c.URL into an Authorization
// header (c.Headers is copied, never modified in place).
func (c *Config) moveURLCredentials() {
	clean, auth, err := URLCredentials(c.URL)
	if err != nil || auth == "" {
		return
	}
	h := make(map[string]string, len(c.Headers)+1)
	for k, v := range c.Headers {
		h[k] = v
	}
	h["Authorization"] = auth
	c.URL, c.Headers = clean, h
}

// redactedURL is raw without the password of its user info, for messages;
// a URL that does not parse loses everything between "//" and the last
// "@" instead.
func redactedURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	if i, j := strings.Index(raw, "//"), strings.LastIndex(raw, "@"); i >= 0 && j > i {
		return raw[:i+2] + "…" + raw[j:]
	}
	return raw
}
