package jsonwire

// Valid reports whether doc is one JSON value, exactly as json.Valid does
// (the same grammar, bytes of strings left unchecked as UTF-8, and nesting
// at most 10,000 deep), in one pass without json.Valid's state machine,
// which calls a function per byte. Hand-written because BenchmarkValid
// shows it pays against json.Valid and jsontext.
func Valid(doc []byte) bool {
	v := jsonValidator{doc: doc}
	v.space()
	if !v.value(0) {
		return false
	}
	v.space()
	return v.i == len(doc)
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

type jsonValidator struct {
	doc []byte
	i   int
}

func (v *jsonValidator) space() {
	for v.i < len(v.doc) {
		switch v.doc[v.i] {
		case ' ', '\t', '\n', '\r':
			v.i++
		default:
			return
		}
	}
}

// value reads one value at nesting depth (the arrays and objects around it).
func (v *jsonValidator) value(depth int) bool {
	if v.i >= len(v.doc) {
		return false
	}
	switch c := v.doc[v.i]; {
	case c == '{':
		return v.object(depth + 1)
	case c == '[':
		return v.array(depth + 1)
	case c == '"':
		return v.string()
	case c == '-' || '0' <= c && c <= '9':
		return v.number()
	case c == 't':
		return v.literal("true")
	case c == 'f':
		return v.literal("false")
	case c == 'n':
		return v.literal("null")
	}
	return false
}

func (v *jsonValidator) literal(word string) bool {
	if len(v.doc)-v.i < len(word) || string(v.doc[v.i:v.i+len(word)]) != word {
		return false
	}
	v.i += len(word)
	return true
}

// object and array read a container from its opening bracket.
func (v *jsonValidator) object(depth int) bool {
	if done, ok := v.open(depth, '}'); done {
		return ok
	}
	for {
		if v.i >= len(v.doc) || v.doc[v.i] != '"' || !v.string() {
			return false
		}
		v.space()
		if v.i >= len(v.doc) || v.doc[v.i] != ':' {
			return false
		}
		v.i++
		v.space()
		if !v.value(depth) {
			return false
		}
		if more, ok := v.next('}'); !more {
			return ok
		}
	}
}

func (v *jsonValidator) array(depth int) bool {
	if done, ok := v.open(depth, ']'); done {
		return ok
	}
	for {
		if !v.value(depth) {
			return false
		}
		if more, ok := v.next(']'); !more {
			return ok
		}
	}
}

// open steps into a container at depth: done when it is over already,
// empty (ok) or too deep (not ok).
func (v *jsonValidator) open(depth int, closer byte) (done, ok bool) {
	if depth > maxDepth {
		return true, false
	}
	v.i++ // { or [
	v.space()
	if v.i < len(v.doc) && v.doc[v.i] == closer {
		v.i++
		return true, true
	}
	return false, true
}

// next reads what follows a member: more after a comma, the end of the
// container (ok) at its closer, anything else not ok.
func (v *jsonValidator) next(closer byte) (more, ok bool) {
	v.space()
	if v.i >= len(v.doc) {
		return false, false
	}
	switch v.doc[v.i] {
	case ',':
		v.i++
		v.space()
		return true, true
	case closer:
		v.i++
		return false, true
	}
	return false, false
}

// plainByte marks the bytes a string holds as they are: not a quote, a
// backslash or a control character.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// string reads a string from its opening quote.
func (v *jsonValidator) string() bool {
	v.i++ // "
	doc := v.doc
	for v.i < len(doc) {
		i := v.i
		for i < len(doc) && plainByte[doc[i]] {
			i++
		}
		v.i = i
		if i == len(doc) {
			return false
		}
		c := doc[i]
		switch {
		case c == '"':
			v.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			v.i++
			if v.i >= len(v.doc) {
				return false
			}
			switch v.doc[v.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				v.i++
			case 'u':
				if len(v.doc)-v.i < 5 {
					return false
				}
				for _, h := range v.doc[v.i+1 : v.i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				v.i += 5
			default:
				return false
			}
		}
	}
	return false
}

func (v *jsonValidator) number() bool {
	if v.doc[v.i] == '-' {
		v.i++
	}
	switch {
	case v.i < len(v.doc) && v.doc[v.i] == '0':
		v.i++
	case v.digits() == 0:
		return false
	}
	if v.i < len(v.doc) && v.doc[v.i] == '.' {
		v.i++
		if v.digits() == 0 {
			return false
		}
	}
	if v.i < len(v.doc) && (v.doc[v.i] == 'e' || v.doc[v.i] == 'E') {
		v.i++
		if v.i < len(v.doc) && (v.doc[v.i] == '+' || v.doc[v.i] == '-') {
			v.i++
		}
		if v.digits() == 0 {
			return false
		}
	}
	return true
}

// digits skips decimal digits and returns how many.
func (v *jsonValidator) digits() int {
	start := v.i
	for v.i < len(v.doc) && '0' <= v.doc[v.i] && v.doc[v.i] <= '9' {
		v.i++
	}
	return v.i - start
}
