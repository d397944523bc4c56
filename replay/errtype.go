package replay

import "encoding/json"

// maxServerType bounds the server error type kept on a record.
const maxServerType = 200

// serverErrorType returns the server's own error type from an error body or
// a stream error event: "type" (or "error_type") at the top level, as vLLM
// and SGLang write it, or inside an "error" object, as OpenAI and newer
// vLLM do. "" when the body is not JSON or names no type.
func serverErrorType(body []byte) string {
	var v struct {
		Type      json.RawMessage `json:"type"`
		ErrorType json.RawMessage `json:"error_type"`
		Error     json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	str := func(raw json.RawMessage) string {
		var s string
		if json.Unmarshal(raw, &s) != nil || len(s) > maxServerType {
			return ""
		}
		return s
	}
	if len(v.Error) > 0 && v.Error[0] == '{' {
		var in struct {
			Type      json.RawMessage `json:"type"`
			ErrorType json.RawMessage `json:"error_type"`
		}
		if json.Unmarshal(v.Error, &in) == nil {
			if s := str(in.Type); s != "" {
				return s
			}
			if s := str(in.ErrorType); s != "" {
				return s
			}
		}
	}
	if s := str(v.Type); s != "" && s != "error" { // {"object":"error","type":…}; "error" alone names nothing
		return s
	}
	return str(v.ErrorType)
}
