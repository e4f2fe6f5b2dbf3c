package telemetry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// RequestIDHeader is the header a request's id comes in and goes back in.
const RequestIDHeader = "X-Request-Id"

// MaxRequestIDLen is the longest request id taken from a client.
const MaxRequestIDLen = 128

type requestIDKey struct{}

// RequestID returns the id of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// ValidRequestID reports whether a client's request id is taken as it is:
// 1 to MaxRequestIDLen printable ASCII characters (space to tilde). Any
// other is replaced, so a log line never carries a client's control
// characters or an unbounded value.
func ValidRequestID(id string) bool {
	if id == "" || len(id) > MaxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// newRequestID is 128 random bits in hex.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// Middleware gives every request an id, the client's X-Request-Id when
// valid and a new one otherwise, returned in the response's X-Request-Id
// and carried in the request's context for the log (NewLogHandler).
//
// With tracing on, each request that traced says yes to is a server span,
// the child of the client's traceparent when it sends one; with tracing
// off a valid traceparent is still read, so that the log lines of the
// request carry the client's trace id.
func Middleware(next http.Handler, t *Tracing, traced func(*http.Request) bool) http.Handler {
	var spans http.Handler
	if t != nil && t.Provider != nil {
		// The server span carries the request id too.
		marked := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("http.request.header.x-request-id", RequestID(r.Context())))
			next.ServeHTTP(w, r)
		})
		spans = otelhttp.NewHandler(marked, "flowsnap",
			otelhttp.WithTracerProvider(t.Provider),
			otelhttp.WithPropagators(Propagator),
			otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
			otelhttp.WithFilter(traced),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
				if r.URL.Path == "/graphql" {
					return r.Method + " /graphql"
				}
				return r.Method
			}))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !ValidRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set(RequestIDHeader, id)
		ctx := context.WithValue(r.Context(), requestIDKey{}, id)
		if spans == nil || !traced(r) {
			if r.Header.Get("traceparent") != "" {
				ctx = Propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
			}
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		spans.ServeHTTP(w, r.WithContext(ctx))
	})
}
