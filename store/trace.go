package store

import (
	"context"
	"database/sql"
	"strings"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Each statement a traced operation runs is a span, the child of the span
// in its context (docs/contract.md#traces): on PostgreSQL pgx's tracer
// interface makes them (otelpgx, statements of a pipelined batch each a
// span of their own); on SQLite the transaction seam does, around the
// driver. A statement whose context carries no recording span (the
// subscriptions' watcher, the workflow metrics) makes none, and with
// tracing off (no TracerProvider) nothing is looked at at all.

const tracerName = "github.com/flowsnap/flowsnap/store"

// tracePostgres has pgx trace cfg's statements through tp.
func tracePostgres(cfg *pgxpool.Config, tp trace.TracerProvider) {
	if tp == nil {
		return
	}
	cfg.ConnConfig.Tracer = otelpgx.NewTracer(
		otelpgx.WithTracerProvider(tp),
		otelpgx.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelpgx.WithTrimSQLInSpanName(),
		otelpgx.WithDisableConnectionDetailsInAttributes(),
	)
}

// startStatement starts the span of SQLite statement q, when tracing is
// on and ctx's span records; span is nil otherwise.
func startStatement(ctx context.Context, tr trace.Tracer, q string) (context.Context, trace.Span) {
	if tr == nil || !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, nil
	}
	return tr.Start(ctx, statementName(q), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(semconv.DBSystemNameSQLite, semconv.DBQueryText(q)))
}

// endStatement ends span, which may be nil, with err.
func endStatement(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// statementName is a span's name: the statement's first keyword, as pgx's
// tracer names PostgreSQL's.
func statementName(q string) string {
	q = strings.TrimSpace(q)
	if i := strings.IndexAny(q, " \n\t("); i > 0 {
		q = q[:i]
	}
	return strings.ToUpper(q)
}

// tracedRows end their statement's span when closed.
type tracedRows struct {
	*sql.Rows
	span trace.Span
}

func (r tracedRows) Close() {
	_ = r.Rows.Close()
	endStatement(r.span, r.Rows.Err())
}

// tracedRow ends its statement's span when scanned.
type tracedRow struct {
	Row
	span trace.Span
}

func (r tracedRow) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if err == ErrNoRows {
		endStatement(r.span, nil)
	} else {
		endStatement(r.span, err)
	}
	return err
}
