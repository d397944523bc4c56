package replay

import (
	"bytes"
	"strconv"

	"github.com/agentperf/agentperf/internal/jsonx"

	"github.com/agentperf/agentperf/dataset"
)

// bodyParams are the per-request fields of a request body.
type bodyParams struct {
	model     string
	maxTokens int
	// session is Dynamo's nvext.session_control object (nil: none).
	session []byte
}

// appendBodyHead appends `{"model":…,"messages":` to dst.
func appendBodyHead(dst []byte, p bodyParams) []byte {
	dst = append(dst, `{"model":`...)
	dst = appendJSONString(dst, p.model)
	dst = append(dst, `,"messages":`...)
	return dst
}

// appendBodyTail appends the fields after the messages and closes the object.
func appendBodyTail(dst []byte, c *runConfig, p bodyParams) []byte {
	if c.Streaming {
		dst = append(dst, `,"stream":true,"stream_options":{"include_usage":true}`...)
	} else {
		dst = append(dst, `,"stream":false`...)
	}
	if c.UseLegacyMaxTokens {
		dst = append(dst, `,"max_tokens":`...)
	} else {
		dst = append(dst, `,"max_completion_tokens":`...)
	}
	dst = strconv.AppendInt(dst, int64(p.maxTokens), 10)
	if c.IgnoreEOS {
		dst = append(dst, `,"ignore_eos":true`...)
	}
	merged := false
	for _, e := range c.ExtraInputs {
		dst = append(dst, ',')
		dst = appendJSONString(dst, e.Key)
		dst = append(dst, ':')
		if e.Key == "nvext" && p.session != nil && len(e.Value) > 1 && e.Value[0] == '{' {
			// The user's nvext object keeps its keys; session_control
			// joins them.
			dst = append(dst, `{"session_control":`...)
			dst = append(dst, p.session...)
			if rest := bytes.TrimSpace(e.Value[1:]); len(rest) > 0 && rest[0] != '}' {
				dst = append(dst, ',')
			}
			dst = append(dst, e.Value[1:]...)
			merged = true
			continue
		}
		dst = append(dst, e.Value...)
	}
	if p.session != nil && !merged {
		dst = append(dst, `,"nvext":{"session_control":`...)
		dst = append(dst, p.session...)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendSessionControl appends Dynamo's session_control object.
func appendSessionControl(dst []byte, id string, timeout int, bind bool) []byte {
	dst = append(dst, `{"session_id":`...)
	dst = appendJSONString(dst, id)
	dst = append(dst, `,"timeout":`...)
	dst = strconv.AppendInt(dst, int64(timeout), 10)
	if bind {
		dst = append(dst, `,"action":"bind"`...)
	}
	return append(dst, '}')
}

// appendJSONString appends s as a JSON string literal (RFC 8259).
func appendJSONString(dst []byte, s string) []byte { return jsonx.AppendString(dst, s) }

// modelMap rewrites a trace's recorded models to the wire models: the
// model of the first parent request maps to models[0], every other
// distinct recorded model — of the parent requests in order, then of the
// subagents' requests — to models[1:] in order of first appearance,
// wrapping modulo len(models).
type modelMap map[string]string

func newModelMap(tr *dataset.Trace, models []string) modelMap {
	m := modelMap{}
	if len(models) == 1 || len(tr.Requests) == 0 {
		return m
	}
	m[tr.Requests[0].Model] = models[0]
	next := 1
	add := func(reqs []dataset.Request) {
		for _, r := range reqs {
			if _, ok := m[r.Model]; !ok {
				m[r.Model] = models[next%len(models)]
				next++
			}
		}
	}
	add(tr.Requests)
	var walk func([]dataset.Subagent)
	walk = func(ss []dataset.Subagent) {
		for i := range ss {
			add(ss[i].Requests)
			walk(ss[i].Subagents)
		}
	}
	walk(tr.Subagents)
	return m
}

func (m modelMap) wire(recorded string, models []string) string {
	if w, ok := m[recorded]; ok {
		return w
	}
	return models[0]
}
