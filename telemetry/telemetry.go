// Package telemetry is how flowsnap is traced and how its log lines are
// tied to a request (docs/contract.md#traces): OpenTelemetry configured by
// the standard OTEL_* environment variables, the HTTP middleware that
// continues a W3C traceparent and gives every request an id, and the log
// handler that writes that id and the trace id on every line of the
// request.
//
// Tracing is off unless the environment names an exporter. Off, no span
// is made anywhere: the instrumented code holds a nil tracer and skips its
// spans, so the cost is a nil check (BenchmarkTracing).
package telemetry

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Propagator reads and writes W3C trace context (traceparent, tracestate).
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Tracing is the process's tracer provider, or nothing when tracing is off.
type Tracing struct {
	// Provider is nil when tracing is off.
	Provider trace.TracerProvider
	shutdown func(context.Context) error
}

// Setup configures tracing from the environment (getenv): it is on when
// OTEL_TRACES_EXPORTER names an exporter other than none, or when it is
// unset and an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); OTEL_SDK_DISABLED=true turns it off.
// The exporter itself, its endpoint, protocol, headers, sampler and
// resource attributes are read by the OpenTelemetry SDK from the process
// environment, as its specification says. version goes into the resource.
func Setup(ctx context.Context, getenv func(string) string, version string) (*Tracing, error) {
	if !enabled(getenv) {
		return &Tracing{}, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("configuring traces from OTEL_* variables: %w", err)
	}
	if autoexport.IsNoneSpanExporter(exp) {
		return &Tracing{}, nil
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, read last, win.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName("flowsnap"), semconv.ServiceVersion(version)),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("describing the service for traces: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{Provider: tp, shutdown: tp.Shutdown}, nil
}

// ForTest returns tracing through tp, for tests with an in-memory
// exporter.
func ForTest(tp trace.TracerProvider) *Tracing { return &Tracing{Provider: tp} }

// Shutdown flushes the spans not yet exported; ctx bounds it.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// Tracer returns the named tracer, or nil when tracing is off.
func (t *Tracing) Tracer(name string) trace.Tracer {
	if t == nil || t.Provider == nil {
		return nil
	}
	return t.Provider.Tracer(name)
}

func enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	default:
		return true
	}
}
