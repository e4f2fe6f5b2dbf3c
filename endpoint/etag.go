package endpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/snapshot"
)

// A GET query's answer is a function of the request and the position it is
// read at, so the pair is its validator: a weak ETag (the JSON could be
// written differently, never mean something else). A client that sends the
// tag back in If-None-Match is answered 304 after one statement that reads
// the position, without the operation being run, while the store has not
// moved.

// requestDigest names what a GET's answer depends on besides the position:
// the operation as sent, the media type asked for, and who asks — the
// principal's key (docs/contract.md#scopes), so that one principal's tag
// never earns another a 304 of an answer it was not given.
func requestDigest(r *http.Request) string {
	q := r.URL.Query()
	h := sha256.New()
	if k := access.FromContext(r.Context()).Key(); k != "" {
		_, _ = fmt.Fprintf(h, "principal:%s\n", k)
	}
	for _, k := range []string{"query", "variables", "operationName", "extensions"} {
		_, _ = fmt.Fprintf(h, "%d:%s\n", len(q.Get(k)), q.Get(k))
	}
	_, _ = fmt.Fprintf(h, "%d:%s\n", len(r.Header.Get("Accept")), r.Header.Get("Accept"))
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// etag is the weak entity tag of digest's answer at pos.
func etag(pos snapshot.Position, digest string) string {
	return fmt.Sprintf(`W/"%s-%d-%s"`, pos.Source, pos.Revision, digest)
}

// matches reports whether the If-None-Match list holds tag, compared weakly
// (RFC 9110 §13.1.2).
func matches(ifNoneMatch, tag string) bool {
	want := strings.TrimPrefix(tag, "W/")
	for _, t := range strings.Split(ifNoneMatch, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == want {
			return true
		}
	}
	return false
}

// notModified answers 304 when r's If-None-Match holds the tag of the
// answer at the current position. It reads the position in a read of its
// own (one statement); on any failure to read it, the request goes on to be
// answered in full, which reports the failure.
func (e *endpoint) notModified(ctx context.Context, w http.ResponseWriter, r *http.Request, digest string) bool {
	inm := r.Header.Get("If-None-Match")
	if inm == "" {
		return false
	}
	ctx, rd := e.reader.Begin(ctx)
	pos, err := e.reader.Position(ctx)
	rd.End()
	if e.opts.OnOperation != nil {
		e.opts.OnOperation(rd)
	}
	if err != nil {
		return false
	}
	tag := etag(pos, digest)
	if !matches(inm, tag) {
		return false
	}
	w.Header().Set("ETag", tag)
	w.WriteHeader(http.StatusNotModified)
	return true
}
