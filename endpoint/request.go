package endpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"strings"
	"sync/atomic"

	"github.com/flowsnap/flowsnap/jsonwire"
)

// queryText is the text of a body's query member, which requestShape
// found to be a JSON string. One without escapes is its own text; one with
// them (a query's new lines, as clients send them) is decoded by
// jsonwire.Unquote, without encoding/json scanning the document again.
func queryText(raw json.RawMessage) (string, bool) {
	if len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	return jsonwire.Unquote(raw)
}

// queryTexts remembers the texts of the queries lately sent, by their
// members as sent: clients send the same few queries again and again, and
// unquoting one of a few kilobytes, its new lines and indents escaped,
// costs microseconds where comparing it costs a fraction of one. Each of
// queryTextSlots places holds one query of at most maxRememberedQuery
// bytes, the last sent of those whose hash picks it.
type queryTexts struct {
	seed  maphash.Seed
	slots [queryTextSlots]atomic.Pointer[rememberedQuery]
}

type rememberedQuery struct{ raw, text string }

const (
	queryTextSlots     = 64
	maxRememberedQuery = 16 << 10
)

func newQueryTexts() *queryTexts { return &queryTexts{seed: maphash.MakeSeed()} }

// text is queryText(raw), remembered.
func (c *queryTexts) text(raw json.RawMessage) (string, bool) {
	if len(raw) > maxRememberedQuery {
		return queryText(raw)
	}
	slot := &c.slots[maphash.Bytes(c.seed, raw)%queryTextSlots]
	if q := slot.Load(); q != nil && q.raw == string(raw) {
		return q.text, true
	}
	text, ok := queryText(raw)
	if ok {
		slot.Store(&rememberedQuery{raw: string(raw), text: text})
	}
	return text, ok
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
	if jsonwire.CountValues(body) > maxValues+16 {
		return none, fmt.Sprintf("the variables hold more than %d values", maxValues)
	}
	if !jsonwire.Valid(body) {
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
// null. Hand-written because BenchmarkRequestMembers shows it pays
// against encoding/json, which scans the body twice and reflects on every
// member.
func requestMembers(body []byte) (p cachedParams, ok bool) {
	i := jsonwire.SkipSpace(body, 0)
	if bytes.HasPrefix(body[i:], []byte("null")) {
		return p, true
	}
	if i >= len(body) || body[i] != '{' {
		return p, false
	}
	i = jsonwire.SkipSpace(body, i+1)
	for i < len(body) && body[i] == '"' {
		end := jsonwire.SkipValue(body, i)
		key := string(body[i+1 : end-1])
		if strings.IndexByte(key, '\\') >= 0 {
			_ = json.Unmarshal(body[i:end], &key)
		}
		i = jsonwire.SkipSpace(body, jsonwire.SkipSpace(body, end)+1) // past the colon
		vend := jsonwire.SkipValue(body, i)
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
		i = jsonwire.SkipSpace(body, vend)
		if i < len(body) && body[i] == ',' {
			i = jsonwire.SkipSpace(body, i+1)
		}
	}
	return p, true
}

// noQuery refuses a request with neither a query nor the extensions that
// stand for one (a persisted query's hash): it is no GraphQL request.
const noQuery = "the request has no query"

// absent reports whether a JSON member is missing or null.
func absent(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }
