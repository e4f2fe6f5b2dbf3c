package graph

import (
	"context"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/fault"
)

// payload returns v, a payload field's value (docs/contract.md#payloads),
// when the principal ctx carries may read payloads; otherwise the zero
// value, which gqlgen answers as null, beside a FORBIDDEN error at the
// field's path. The error does not depend on v, so that it tells nothing
// of whether the run has such a payload.
func payload[T any](ctx context.Context, v T) (T, error) {
	if !access.FromContext(ctx).Payloads {
		var zero T
		return zero, errPayloads
	}
	return v, nil
}

var errPayloads = fault.Errorf(fault.Forbidden, "this credential may not read payloads: state, results, errors, event payloads, waiting requests and event log details")
