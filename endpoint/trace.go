package endpoint

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowsnap/flowsnap/endpoint/record"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
)

// An operation is a span (docs/contract.md#traces), the child of the
// request's, and the parent of the statements its read runs: the read
// opens with the context the span is in. A subscription's events are a
// span each, from when the event's read is lent to the stream (which then
// waits for a change: the span's "read" event marks when the read begins)
// to when the event is made. With Options.Tracer nil nothing here runs.

// startOperation starts the span of the operation in ctx; span is nil
// when tracer is.
func startOperation(ctx context.Context, tracer trace.Tracer) (context.Context, trace.Span) {
	if tracer == nil {
		return ctx, nil
	}
	name, kind := operationOf(ctx)
	if kind == "" {
		kind = "query"
	}
	name = record.Clip(name)
	spanName := kind
	if name != "" {
		spanName += " " + name
	}
	return tracer.Start(ctx, spanName, trace.WithAttributes(
		attribute.String("graphql.operation.type", kind),
		attribute.String("graphql.operation.name", name)))
}

// endSpan ends span, which may be nil, with what the operation or event
// read and how it ended: outcome is ok or the first error's code.
func endSpan(span trace.Span, rd *snapshot.Read, cost *Cost, outcome string) {
	if span == nil {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.String("flowsnap.outcome", outcome),
		attribute.Int("flowsnap.statements", rd.Statements()),
	}
	if pos, ok := rd.Position(); ok {
		attrs = append(attrs, attribute.String("flowsnap.position.source", pos.Source),
			attribute.Int64("flowsnap.position.revision", pos.Revision))
	}
	if cost != nil {
		attrs = append(attrs, attribute.Int("flowsnap.cost", cost.Requested))
	}
	span.SetAttributes(attrs...)
	if outcome != "ok" {
		span.SetStatus(codes.Error, outcome)
	}
	span.End()
}

// outcomeOf is ok, or the code of resp's first error.
func outcomeOf(resp *graphql.Response) string {
	if resp == nil || len(resp.Errors) == 0 {
		return "ok"
	}
	if code, ok := resp.Errors[0].Extensions["code"].(string); ok {
		return code
	}
	return "error"
}

// startEvent starts the span of one event of subscription name (its field
// field); span is nil when tracer is.
func startEvent(ctx context.Context, tracer trace.Tracer, name, field string) (context.Context, trace.Span) {
	if tracer == nil {
		return ctx, nil
	}
	return tracer.Start(ctx, "subscription event "+field, trace.WithAttributes(
		attribute.String("graphql.operation.type", "subscription"),
		attribute.String("graphql.operation.name", record.Clip(name)),
		attribute.String("flowsnap.subscription.field", field)))
}

// endEvent ends span, which may be nil, the span of one event: resp is the
// event (nil when the subscription ended instead), err the error of its
// root field.
func endEvent(span trace.Span, rd *snapshot.Read, resp *graphql.Response, err error) {
	if span == nil {
		return
	}
	outcome := outcomeOf(resp)
	if err != nil {
		outcome = string(fault.CodeOf(err))
	}
	if resp == nil {
		// No event: the subscription ended while this one waited.
		span.SetAttributes(attribute.Bool("flowsnap.subscription.ended", true))
	}
	endSpan(span, rd, nil, outcome)
}
