package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// kv is one key of an ordered JSON object.
type kv struct {
	k string
	v any
}

// obj is a JSON object whose keys are written in order. Entries whose
// value is nil or a non-finite float are omitted (aiperf omits nulls).
type obj []kv

// rawInt is a whole number written as a JSON integer.
type rawInt int64

// appendJSON appends v as indented JSON (2 spaces, Python json.dumps
// layout) at nesting depth. Maps are written with sorted keys; types it
// does not know are converted through encoding/json first.
func appendJSON(b []byte, v any, depth int) ([]byte, error) {
	var err error
	switch x := v.(type) {
	case nil, nilValue:
		return append(b, "null"...), nil
	case obj:
		n := 0
		for _, e := range x {
			if omitted(e.v) {
				continue
			}
			if n == 0 {
				b = append(b, '{')
			} else {
				b = append(b, ',')
			}
			n++
			b = newline(b, depth+1)
			b = appendString(b, e.k)
			b = append(b, ':', ' ')
			if b, err = appendJSON(b, e.v, depth+1); err != nil {
				return b, fmt.Errorf("%s: %w", e.k, err)
			}
		}
		if n == 0 {
			return append(b, '{', '}'), nil
		}
		b = newline(b, depth)
		return append(b, '}'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		o := make(obj, 0, len(keys))
		for _, k := range keys {
			o = append(o, kv{k, x[k]})
		}
		return appendJSON(b, o, depth)
	case []any:
		if len(x) == 0 {
			return append(b, '[', ']'), nil
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = newline(b, depth+1)
			if b, err = appendJSON(b, e, depth+1); err != nil {
				return b, err
			}
		}
		b = newline(b, depth)
		return append(b, ']'), nil
	case []string:
		a := make([]any, len(x))
		for i := range x {
			a[i] = x[i]
		}
		return appendJSON(b, a, depth)
	case []obj:
		a := make([]any, len(x))
		for i := range x {
			a[i] = x[i]
		}
		return appendJSON(b, a, depth)
	case string:
		return appendString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case rawInt:
		return strconv.AppendInt(b, int64(x), 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return append(b, "null"...), nil
		}
		return appendFloat(b, x), nil
	case json.Number:
		return append(b, x...), nil
	case json.RawMessage:
		// Laid out as the rest, its keys kept in order.
		d := json.NewDecoder(bytes.NewReader(x))
		d.UseNumber()
		v, err := decodeOrdered(d)
		if err != nil {
			return b, fmt.Errorf("raw JSON: %w", err)
		}
		return appendJSON(b, v, depth)
	default:
		raw, err := json.Marshal(x)
		if err != nil {
			return b, fmt.Errorf("encode %T: %w", v, err)
		}
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var g any
		if err := d.Decode(&g); err != nil {
			return b, fmt.Errorf("re-decode %T: %w", v, err)
		}
		return appendJSON(b, g, depth)
	}
}

// omitted reports whether an object entry is left out.
func omitted(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case float64:
		return math.IsNaN(x) || math.IsInf(x, 0)
	case obj:
		return x == nil
	case map[string]any:
		return x == nil
	}
	return false
}

func newline(b []byte, depth int) []byte {
	b = append(b, '\n')
	for range depth {
		b = append(b, ' ', ' ')
	}
	return b
}

// secretWords are the key fragments whose values redact removes.
var secretWords = []string{"api_key", "apikey", "authorization", "secret", "password", "passwd", "credential", "bearer"}

// isSecretKey reports whether a configuration key names a secret: it
// contains api_key, authorization, secret, password or credential, or it
// is a token (token, hf_token, access_token, x-api-token …) — but not a
// token count or a tokenizer (max_tokens, tokenizer, use_server_token_count).
func isSecretKey(k string) bool {
	k = strings.ToLower(strings.ReplaceAll(k, "-", "_"))
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	for _, part := range strings.Split(k, "_") {
		if part == "token" || part == "auth" {
			return !strings.HasSuffix(k, "_count") && !strings.HasSuffix(k, "_len") && !strings.HasSuffix(k, "_length")
		}
	}
	return strings.HasSuffix(k, "token") && !strings.HasSuffix(k, "_per_token")
}

// redact returns a deep copy of v with the values of secret keys replaced
// by a placeholder.
func redact(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if isSecretKey(k) && e != nil && e != "" {
				out[k] = redactedPlaceholder
			} else {
				out[k] = redact(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = redact(x[i])
		}
		return out
	case string, bool, int, int64, float64, json.Number, nil, []string:
		return v
	default:
		raw, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprintf("<unencodable %T>", v)
		}
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var g any
		if d.Decode(&g) != nil {
			return fmt.Sprintf("<unencodable %T>", v)
		}
		return redact(g)
	}
}
