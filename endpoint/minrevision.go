package endpoint

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// MinRevisionHeader is the request header that carries a client's minimum
// revision (docs/contract.md#replicas), as extensions.minRevision does.
const MinRevisionHeader = "Flowsnap-Min-Revision"

type minHeaderKey struct{}

// withMinRevisionHeader puts the request's Flowsnap-Min-Revision header on
// its context, for every transport.
func withMinRevisionHeader(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, withMinHeader(r))
	})
}

// withMinHeader returns r with its Flowsnap-Min-Revision header, if it has
// one, on its context.
func withMinHeader(r *http.Request) *http.Request {
	if v, ok := r.Header[http.CanonicalHeaderKey(MinRevisionHeader)]; ok {
		return r.WithContext(context.WithValue(r.Context(), minHeaderKey{}, strings.Join(v, ",")))
	}
	return r
}

// minRevision returns the least revision the operation must read at: the
// largest of the request's Flowsnap-Min-Revision header, its
// extensions.minRevision, the revision of every cursor the operation
// continues after, and the since of a change feed (a replica behind it must
// not answer SOURCE_CHANGED) — the last two found by the operation's one
// walk (argumentRevision) — so that neither a client that sends the last
// revision it saw nor one that pages sees an older one. A
// malformed header or extension is BAD_USER_INPUT; a malformed cursor is
// left to the field that reads it.
func minRevision(ctx context.Context) (int64, error) {
	var min int64
	if h, ok := ctx.Value(minHeaderKey{}).(string); ok {
		n, err := parseRevision(strings.TrimSpace(h))
		if err != nil {
			return 0, fault.Errorf(fault.BadUserInput, "the %s header must be a revision, a whole number in 0..2^53-1", MinRevisionHeader)
		}
		min = n
	}
	oc := graphql.GetOperationContext(ctx)
	if oc == nil {
		return min, nil
	}
	if v, ok := oc.Extensions["minRevision"]; ok && v != nil {
		n, ok := revisionValue(v)
		if !ok {
			return 0, fault.Errorf(fault.BadUserInput, "extensions.minRevision must be a revision, a whole number in 0..2^53-1")
		}
		min = max(min, n)
	}
	if m, ok := oc.Stats.GetExtension(minRevisionKey).(int64); ok {
		min = max(min, m)
	}
	return min, nil
}

// minRevisionKey holds, in an operation context's stats, the least
// revision its arguments ask for, which operationWalk finds.
const minRevisionKey = "flowsnap.minRevision"

// argumentRevision is the least revision f's own arguments ask for: the
// revision of the cursor it continues after (any argument named after), or
// the since of a changes field; 0 for none. A malformed cursor, and one of
// another store than source (when known), are left to the field that reads
// them, which refuses the latter as a cursor of another store rather than
// waiting for a revision this store may never reach.
func argumentRevision(f *ast.Field, vars map[string]any, source string) int64 {
	var min int64
	if a := f.Arguments.ForName("after"); a != nil && a.Value != nil {
		if v, err := a.Value.Value(vars); err == nil {
			if str, ok := v.(string); ok && str != "" {
				if c, err := cursor.Decode(str); err == nil && (source == "" || c.Source == source) {
					min = c.Revision
				}
			}
		}
	}
	if a := f.Arguments.ForName("since"); a != nil && a.Value != nil && f.Name == "changes" {
		if v, err := a.Value.Value(vars); err == nil {
			if n, ok := revisionValue(v); ok {
				min = max(min, n)
			}
		}
	}
	return min
}

func parseRevision(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > vocab.MaxSafe {
		return 0, strconv.ErrRange
	}
	return n, nil
}

// revisionValue reads a revision from decoded JSON: a whole number, or a
// string of one.
func revisionValue(v any) (int64, bool) {
	switch x := v.(type) {
	case float64:
		if x < 0 || x > vocab.MaxSafe || x != float64(int64(x)) {
			return 0, false
		}
		return int64(x), true
	case int64:
		return x, x >= 0 && x <= vocab.MaxSafe
	case int:
		return int64(x), x >= 0 && int64(x) <= vocab.MaxSafe
	case string:
		n, err := parseRevision(x)
		return n, err == nil
	default:
		if n, ok := v.(interface{ Int64() (int64, error) }); ok {
			i, err := n.Int64()
			return i, err == nil && i >= 0 && i <= vocab.MaxSafe
		}
		return 0, false
	}
}
