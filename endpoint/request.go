package endpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// queryText is the text of a body's query member, which requestShape
// found to be a JSON string. One without escapes is its own text: decoding
// it again would scan the whole document twice more.
func queryText(raw json.RawMessage) (string, bool) {
	if len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var query string
	err := json.Unmarshal(raw, &query)
	return query, err == nil
}

// requestShape says what is wrong with a POST body that is not one GraphQL
// request object, in words about its shape only; else it returns the
// request's members as sent.
func requestShape(body []byte, maxVariables, maxValues int) (cachedParams, string) {
	var none cachedParams
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return none, "batched requests (a JSON array of operations) are not supported: send one operation per request"
	}
	// Counted before anything is decoded: the request object's own keys
	// and an extensions object take a few more.
	if jsonValues(body) > maxValues+16 {
		return none, fmt.Sprintf("the variables hold more than %d values", maxValues)
	}
	if !json.Valid(body) {
		return none, "the request body is not valid JSON"
	}
	req, ok := requestMembers(body)
	if !ok {
		return none, "the request body must be a JSON object with a query string"
	}
	if len(req.variables) > maxVariables {
		return none, fmt.Sprintf("the variables are larger than %d bytes", maxVariables)
	}
	kinds := []struct {
		name string
		raw  json.RawMessage
		want byte
	}{{"query", req.query, '"'}, {"operationName", req.operationName, '"'}, {"variables", req.variables, '{'}, {"extensions", req.extensions, '{'}}
	for _, k := range kinds {
		if absent(k.raw) || k.raw[0] == k.want {
			continue
		}
		if k.want == '"' {
			return none, fmt.Sprintf("%q must be a string", k.name)
		}
		return none, fmt.Sprintf("%q must be an object", k.name)
	}
	if absent(req.query) && absent(req.extensions) {
		return none, noQuery
	}
	return req, ""
}

// requestMembers returns the members of body, valid JSON, that a GraphQL
// request has, as encoding/json unmarshals an object into fields of those
// names: keys matched without regard to case, the last of a name winning,
// null as no object at all. ok is false when body is neither an object nor
// null. It scans body once, where encoding/json would scan it twice and
// reflect on every member.
func requestMembers(body []byte) (p cachedParams, ok bool) {
	i := skipSpace(body, 0)
	if bytes.HasPrefix(body[i:], []byte("null")) {
		return p, true
	}
	if i >= len(body) || body[i] != '{' {
		return p, false
	}
	i = skipSpace(body, i+1)
	for i < len(body) && body[i] == '"' {
		end := valueEnd(body, i)
		key := string(body[i+1 : end-1])
		if strings.IndexByte(key, '\\') >= 0 {
			_ = json.Unmarshal(body[i:end], &key)
		}
		i = skipSpace(body, skipSpace(body, end)+1) // past the colon
		vend := valueEnd(body, i)
		v := json.RawMessage(body[i:vend])
		switch {
		case strings.EqualFold(key, "query"):
			p.query = v
		case strings.EqualFold(key, "operationName"):
			p.operationName = v
		case strings.EqualFold(key, "variables"):
			p.variables = v
		case strings.EqualFold(key, "extensions"):
			p.extensions = v
		}
		i = skipSpace(body, vend)
		if i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	return p, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// valueEnd returns where the JSON value that starts at b[i] ends, b being
// valid JSON.
func valueEnd(b []byte, i int) int {
	depth, inString := 0, false
	for j := i; j < len(b); j++ {
		c := b[j]
		switch {
		case inString:
			if c == '\\' {
				j++
			} else if c == '"' {
				inString = false
				if depth == 0 {
					return j + 1
				}
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return j
			}
			if depth--; depth == 0 {
				return j + 1
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			return j
		}
	}
	return len(b)
}

// noQuery refuses a request with neither a query nor the extensions that
// stand for one (a persisted query's hash): it is no GraphQL request.
const noQuery = "the request has no query"

// absent reports whether a JSON member is missing or null.
func absent(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// jsonValues counts, without decoding, the list elements and object
// members of a JSON text, roughly (commas and openings outside strings).
func jsonValues(b []byte) int {
	n, inString := 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == ',' || c == '[' || c == '{':
			n++
		}
	}
	return n
}
