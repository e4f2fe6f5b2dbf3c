package endpoint

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/99designs/gqlgen/graphql"

	"github.com/flowsnap/flowsnap/endpoint/record"
	"github.com/flowsnap/flowsnap/jsonwire"
	"github.com/flowsnap/flowsnap/snapshot"
)

// answerBody hands the transport a stand-in for a direct answer without
// errors, and keeps its body, framed (the buffer its data was written in,
// after plan.DataPrefix) completed here with its extensions (the
// operation's cost and position, when known), for serve to send in its
// place (requestErrorWriter): gqlgen's transport writes a response
// with encoding/json, which validates and compacts the whole of its data
// again, while a direct answer's data is written compact and escaped as
// encoding/json escapes it (<, >, &, U+2028 and U+2029 too), so that the
// body is the executor's, byte for byte. It returns nil for a response
// that goes out otherwise (over a WebSocket, an event stream), which the
// caller hands over as it is.
func answerBody(ctx context.Context, framed []byte, ext extensions) *graphql.Response {
	// The data follows {"data": in framed already.
	body := framed
	if ext.hasCost || ext.hasPos {
		body = append(body, `,"extensions":`...)
		body = ext.append(body)
	}
	body = append(body, '}')
	if !record.Of(ctx).SetBody(body) {
		// The response goes out otherwise, with the data as it was.
		return nil
	}
	return &graphql.Response{Data: json.RawMessage("null")}
}

// extensions are what a response's extensions hold: its cost and its
// position, each when known.
type extensions struct {
	cost            Cost
	pos             snapshot.Position
	hasCost, hasPos bool
}

// append appends the extensions as encoding/json marshals them in a
// response: an object of cost and position, in that order.
func (e extensions) append(b []byte) []byte {
	b = append(b, '{')
	if e.hasCost {
		b = append(b, `"cost":{"requested":`...)
		b = strconv.AppendInt(b, int64(e.cost.Requested), 10)
		b = append(b, `,"limit":`...)
		b = strconv.AppendInt(b, int64(e.cost.Limit), 10)
		b = append(b, '}')
	}
	if e.hasPos {
		if e.hasCost {
			b = append(b, ',')
		}
		b = append(b, `"position":{"source":`...)
		b = jsonwire.AppendQuoted(b, e.pos.Source)
		b = append(b, `,"revision":`...)
		b = strconv.AppendInt(b, e.pos.Revision, 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// set puts the extensions in resp's, for a response written otherwise.
func (e extensions) set(resp *graphql.Response) {
	if !e.hasCost && !e.hasPos {
		return
	}
	if resp.Extensions == nil {
		resp.Extensions = map[string]any{}
	}
	if e.hasCost {
		resp.Extensions["cost"] = e.cost
	}
	if e.hasPos {
		resp.Extensions["position"] = e.pos
	}
}
