package main

import (
	neturl "net/url"
	"strings"
)

// checkURLCredentials refuses --url user:password together with another
// source of the Authorization header (replay.Config.Validate refuses it
// too; checking here names the flag or variable that set it).
func checkURLCredentials(url, flagKey, apiKey string, headers map[string]string) error {
	u, err := neturl.Parse(url)
	if err != nil || u.User == nil || strings.HasPrefix(url, "sim:") {
		return nil
	}
	src := ""
	switch {
	case flagKey != "":
		src = "--api-key"
	case apiKey != "":
		src = "OPENAI_API_KEY"
	default:
		for k := range headers {
			if strings.EqualFold(k, "Authorization") {
				src = "--header Authorization"
			}
		}
	}
	if src != "" {
		return usagef("--url %s carries user:password, sent as Basic auth, and %s sets the Authorization header too: pass one of them", u.Redacted(), src)
	}
	return nil
}

// overflowAdvice says how to stop context overflows from agentperf's side,
// in the CLI's terms.
func overflowAdvice(url string) string {
	a := "or pass --max-context-length N (the server's context window in tokens) so that only the traces that fit are replayed"
	if strings.HasPrefix(url, "sim:") {
		a += "; the in-process simulator's window is set in the URL, e.g. sim://?max-model-len=262144 (default 131072)"
	}
	return a
}
