package replay

// validJSON reports whether b is one valid JSON value with optional
// surrounding whitespace: exactly what encoding/json.Valid reports
// (RFC 8259 grammar, nesting up to json's 10000 levels, bytes ≥ 0x80 in
// strings accepted unchecked), but in one pass without the scanner's
// per-byte state-function calls. It checks every SSE event of a stream
// (FuzzValidJSON holds it to json.Valid), so it is on the hot path.
func validJSON(b []byte) bool {
	const maxDepth = 10000
	var kinds [maxDepth/64 + 1]uint64 // bit set: the container at that depth is an object
	depth := 0
	i := skipSpace(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth == maxDepth {
				return false
			}
			if c == '{' {
				kinds[depth/64] |= 1 << (depth % 64)
			} else {
				kinds[depth/64] &^= 1 << (depth % 64)
			}
			depth++
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				depth--
				i++
				break
			}
			if c == '{' {
				var ok bool
				if i, ok = objectKey(b, i); !ok {
					return false
				}
			}
			continue
		case c == '"':
			var ok bool
			if i, ok = scanString(b, i); !ok {
				return false
			}
		case c == '-' || (c >= '0' && c <= '9'):
			var ok bool
			if i, ok = scanNumber(b, i); !ok {
				return false
			}
		case c == 't':
			if !hasLiteral(b, i, "true") {
				return false
			}
			i += 4
		case c == 'f':
			if !hasLiteral(b, i, "false") {
				return false
			}
			i += 5
		case c == 'n':
			if !hasLiteral(b, i, "null") {
				return false
			}
			i += 4
		default:
			return false
		}
		// After a value: close containers or move to the next element.
		for {
			i = skipSpace(b, i)
			if depth == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			obj := kinds[(depth-1)/64]&(1<<((depth-1)%64)) != 0
			c := b[i]
			if (obj && c == '}') || (!obj && c == ']') {
				depth--
				i++
				continue
			}
			if c != ',' {
				return false
			}
			i = skipSpace(b, i+1)
			if obj {
				var ok bool
				if i, ok = objectKey(b, i); !ok {
					return false
				}
			}
			break
		}
	}
}

// objectKey scans `"key" :` and the space after it, returning the index of
// the member's value.
func objectKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i, ok := scanString(b, i)
	if !ok {
		return i, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, false
	}
	return skipSpace(b, i+1), true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// scanString scans the string starting at b[i] == '"' and returns the
// index after its closing quote.
func scanString(b []byte, i int) (int, bool) {
	i++
	for i < len(b) {
		for i < len(b) && byteClass[b[i]]&plainString != 0 {
			i++
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 {
					return i, false
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return i, false
					}
				}
				i += 6
			default:
				return i, false
			}
		}
	}
	return i, false
}

// Classes of bytes inside a string literal, in byteClass.
const (
	plainString = 1 << iota // stands for itself in a string: not '"', '\\' or a control byte
	plainKey                // plainString and ASCII: a key scanCompletion matches as it is
)

// byteClass classifies every byte value (a table lookup per byte instead
// of three comparisons, in the loops that skip the plain run of a string).
var byteClass = func() (t [256]uint8) {
	for c := 0x20; c < 256; c++ {
		if c == '"' || c == '\\' {
			continue
		}
		t[c] = plainString
		if c < 0x80 {
			t[c] |= plainKey
		}
	}
	return t
}()

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// scanNumber scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at b[i].
func scanNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = scanDigits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := scanDigits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := scanDigits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func scanDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
