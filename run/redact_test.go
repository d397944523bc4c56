package run

import (
	neturl "net/url"
	"strings"
	"testing"
)

// TestRedactURL: a URL is echoed as it was typed, its secrets masked.
func TestRedactURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"sim://", "sim://"},
		{"sim://?decode-base-ms=2&kv-capacity-tokens=1000", "sim://?decode-base-ms=2&kv-capacity-tokens=1000"},
		{"http://localhost:8000", "http://localhost:8000"},
		{"http://localhost:8000/", "http://localhost:8000/"},
		{"https://bob:hunter2@api.example.com/v1", "https://bob:xxxxx@api.example.com/v1"},
		{"https://bob@api.example.com", "https://bob@api.example.com"},
		{"https://api.example.com/v1?api_key=s3cret&model=x", "https://api.example.com/v1?api_key=xxxxx&model=x"},
		{"https://api.example.com/?X-Amz-Signature=abc#top", "https://api.example.com/?X-Amz-Signature=xxxxx#top"},
		{"http://[::1", "http://[::1"}, // unparsable: as given
	} {
		if got := RedactURL(c.in); got != c.want {
			t.Errorf("RedactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzRedactURL: any text is echoed without panicking, and a password in
// the user info never survives.
func FuzzRedactURL(f *testing.F) {
	for _, s := range []string{"sim://", "https://bob:hunter2@h/x?api_key=k", "http://[::1", "a:b@c", "?token=x#y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := RedactURL(s)
		u, err := neturl.Parse(s)
		if err != nil {
			return
		}
		if pw, ok := u.User.Password(); ok && len(pw) >= 4 && strings.Contains(out, u.User.Username()+":"+pw+"@") {
			t.Errorf("RedactURL(%q) = %q keeps the password", s, out)
		}
	})
}
