package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/flowsnap/flowsnap/telemetry"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestTracingIsOnOnlyWhenTheEnvironmentNamesAnExporter(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		on   bool
	}{
		{"nothing set", nil, false},
		{"an exporter named", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{"an OTLP endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"an OTLP traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false},
		{"the SDK disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The SDK reads the exporter's own settings from the process
			// environment.
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			tr, err := telemetry.Setup(context.Background(), envOf(c.env), "test")
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Shutdown(context.Background())
			if on := tr.Provider != nil; on != c.on {
				t.Errorf("tracing on = %v, want %v", on, c.on)
			}
			if on := tr.Tracer("x") != nil; on != c.on {
				t.Errorf("a tracer = %v, want %v", on, c.on)
			}
		})
	}
}

func TestAnUnknownExporterIsRefused(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "carrier-pigeon")
	_, err := telemetry.Setup(context.Background(), envOf(map[string]string{"OTEL_TRACES_EXPORTER": "carrier-pigeon"}), "test")
	if err == nil || !strings.Contains(err.Error(), "OTEL_") {
		t.Fatalf("err = %v, want one that names the OTEL_ variables", err)
	}
}

func TestRequestIDs(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	log := slog.New(telemetry.NewLogHandler(slog.NewJSONHandler(&logged, &slog.HandlerOptions{ReplaceAttr: telemetry.Seconds})))
	h := telemetry.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.InfoContext(r.Context(), "line", "took", 1500*time.Millisecond)
	}), &telemetry.Tracing{}, func(*http.Request) bool { return true })
	for _, c := range []struct {
		name, sent string
		kept       bool
	}{
		{"non-ASCII is replaced", "req-42 from:client/€?", false},
		{"printable ASCII is kept", "req-42 from:client/~", true},
		{"128 characters are kept", strings.Repeat("a", 128), true},
		{"129 are replaced", strings.Repeat("a", 129), false},
		{"a tab is replaced", "a\tb", false},
		{"none gets one", "", false},
	} {
		logged.Reset()
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		if c.sent != "" {
			req.Header.Set(telemetry.RequestIDHeader, c.sent)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		id := rec.Header().Get(telemetry.RequestIDHeader)
		if c.kept && id != c.sent || !c.kept && (id == c.sent || len(id) != 32) {
			t.Errorf("%s: sent %q, got %q", c.name, c.sent, id)
		}
		var line map[string]any
		if err := json.Unmarshal(logged.Bytes(), &line); err != nil {
			t.Fatalf("%s: %v: %s", c.name, err, logged.Bytes())
		}
		if line["requestId"] != id {
			t.Errorf("%s: logged requestId %v, answered %q", c.name, line["requestId"], id)
		}
		if line["took"] != 1.5 {
			t.Errorf("%s: a duration of 1.5s logged as %v, want seconds", c.name, line["took"])
		}
	}
}

func TestATraceparentIsLoggedWithTracingOff(t *testing.T) {
	t.Parallel()
	var got trace.SpanContext
	h := telemetry.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = trace.SpanContextFromContext(r.Context())
	}), &telemetry.Tracing{}, func(*http.Request) bool { return true })
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if got.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || !got.IsRemote() {
		t.Errorf("span context %v, want the client's", got)
	}
}
