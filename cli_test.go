package main

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"
)

// TestEveryFlagKeepsItsEnvironmentTwin holds the command line to its
// interface (docs/contract.md#running): each command's flags, and the
// environment twin of each, spelled as they always were.
func TestEveryFlagKeepsItsEnvironmentTwin(t *testing.T) {
	serve := []string{"addr", "timeout", "complexity-limit", "max-depth", "introspection", "run-cache-mb", "max-readers",
		"cors-origin", "log-format", "stale-after", "stats-interval", "stats-max-flows", "live-interval", "max-subscriptions", "debug-addr", "gc-percent",
		"replica", "stale-wait", "stale-from-primary", "replica-check-interval", "max-replica-lag", "allowed-hosts",
		"statement-timeout", "expensive-reads", "pg-exec-mode",
		"auth", "allow-unauthenticated", "tokens-file", "jwt-jwks-url", "jwt-issuer", "jwt-audience", "jwt-claim",
		"tls-cert", "tls-key", "metrics-addr",
		"max-tokens", "max-nodes", "max-fields", "max-same-name", "max-aliases", "max-errors", "max-body-bytes",
		"max-response-bytes", "max-variable-values", "max-parsing", "max-parsing-queue", "parsing-duty-percent",
		"event-timeout", "max-connections", "max-connections-per-client", "max-subscriptions-per-client", "stream-write-timeout", "max-pings-per-second", "max-events"}
	want := map[string][]string{
		"flowsnap":    append([]string{"data", "runs", "rate"}, serve...),
		"serve":       append([]string{"db"}, serve...),
		"migrate":     {"db"},
		"healthcheck": {"addr", "tls-cert"},
		"seed":        {"db", "runs", "seed"},
		"simulate":    {"db", "rate", "seed"},
		"runs":        {"server", "token"},
		"flows":       {"server", "token", "prefix", "output"},
	}
	// The ops commands' own options are the command's, not the deployment's:
	// they have no environment twin.
	noTwin := map[string]bool{"prefix": true, "output": true}
	twins := map[string]string{
		"addr": "FLOWSNAP_ADDR", "timeout": "FLOWSNAP_TIMEOUT", "complexity-limit": "FLOWSNAP_COMPLEXITY_LIMIT",
		"max-depth": "FLOWSNAP_MAX_DEPTH", "introspection": "FLOWSNAP_INTROSPECTION", "run-cache-mb": "FLOWSNAP_RUN_CACHE_MB",
		"max-readers": "FLOWSNAP_MAX_READERS", "cors-origin": "FLOWSNAP_CORS_ORIGIN", "log-format": "FLOWSNAP_LOG_FORMAT",
		"stale-after": "FLOWSNAP_STALE_AFTER", "stats-interval": "FLOWSNAP_STATS_INTERVAL", "stats-max-flows": "FLOWSNAP_STATS_MAX_FLOWS",
		"live-interval": "FLOWSNAP_LIVE_INTERVAL", "max-subscriptions": "FLOWSNAP_MAX_SUBSCRIPTIONS",
		"debug-addr": "FLOWSNAP_DEBUG_ADDR", "gc-percent": "FLOWSNAP_GC_PERCENT", "replica": "FLOWSNAP_REPLICA",
		"stale-wait": "FLOWSNAP_STALE_WAIT", "stale-from-primary": "FLOWSNAP_STALE_FROM_PRIMARY",
		"replica-check-interval": "FLOWSNAP_REPLICA_CHECK_INTERVAL", "pg-exec-mode": "FLOWSNAP_PG_EXEC_MODE",
		"max-replica-lag": "FLOWSNAP_MAX_REPLICA_LAG", "allowed-hosts": "FLOWSNAP_ALLOWED_HOSTS",
		"statement-timeout": "FLOWSNAP_STATEMENT_TIMEOUT", "expensive-reads": "FLOWSNAP_EXPENSIVE_READS",
		"max-tokens": "FLOWSNAP_MAX_TOKENS", "max-nodes": "FLOWSNAP_MAX_NODES", "max-fields": "FLOWSNAP_MAX_FIELDS",
		"max-same-name": "FLOWSNAP_MAX_SAME_NAME", "max-aliases": "FLOWSNAP_MAX_ALIASES", "max-errors": "FLOWSNAP_MAX_ERRORS",
		"max-body-bytes": "FLOWSNAP_MAX_BODY_BYTES", "max-response-bytes": "FLOWSNAP_MAX_RESPONSE_BYTES",
		"max-variable-values": "FLOWSNAP_MAX_VARIABLE_VALUES", "max-parsing": "FLOWSNAP_MAX_PARSING",
		"max-parsing-queue": "FLOWSNAP_MAX_PARSING_QUEUE", "parsing-duty-percent": "FLOWSNAP_PARSING_DUTY_PERCENT",
		"event-timeout": "FLOWSNAP_EVENT_TIMEOUT", "max-connections": "FLOWSNAP_MAX_CONNECTIONS",
		"max-connections-per-client": "FLOWSNAP_MAX_CONNECTIONS_PER_CLIENT", "max-subscriptions-per-client": "FLOWSNAP_MAX_SUBSCRIPTIONS_PER_CLIENT",
		"stream-write-timeout": "FLOWSNAP_STREAM_WRITE_TIMEOUT", "max-pings-per-second": "FLOWSNAP_MAX_PINGS_PER_SECOND", "max-events": "FLOWSNAP_MAX_EVENTS",
		"data": "FLOWSNAP_DATA", "runs": "FLOWSNAP_RUNS", "rate": "FLOWSNAP_RATE", "seed": "FLOWSNAP_SEED", "db": "FLOWSNAP_DB",
		"server": "FLOWSNAP_SERVER", "token": "FLOWSNAP_TOKEN",
		"auth": "FLOWSNAP_AUTH", "allow-unauthenticated": "FLOWSNAP_ALLOW_UNAUTHENTICATED", "tokens-file": "FLOWSNAP_TOKENS_FILE",
		"jwt-jwks-url": "FLOWSNAP_JWT_JWKS_URL", "jwt-issuer": "FLOWSNAP_JWT_ISSUER", "jwt-audience": "FLOWSNAP_JWT_AUDIENCE",
		"jwt-claim": "FLOWSNAP_JWT_CLAIM", "tls-cert": "FLOWSNAP_TLS_CERT", "tls-key": "FLOWSNAP_TLS_KEY", "metrics-addr": "FLOWSNAP_METRICS_ADDR",
	}
	root := newCommand(func(string) string { return "" }, io.Discard, nil)
	cmds := append([]*cli.Command{root}, root.Commands...)
	for _, cmd := range cmds {
		var names []string
		for _, f := range cmd.Flags {
			name := f.Names()[0]
			names = append(names, name)
			var keys []string
			if s, ok := f.(interface{ GetEnvVars() []string }); ok {
				keys = s.GetEnvVars()
			}
			if noTwin[name] {
				if len(keys) != 0 {
					t.Errorf("%s --%s: environment twins %v, want none", cmd.Name, name, keys)
				}
			} else if len(keys) != 1 || keys[0] != twins[name] {
				t.Errorf("%s --%s: environment twins %v, want [%s]", cmd.Name, name, keys, twins[name])
			}
		}
		if !slices.Equal(names, want[cmd.Name]) {
			t.Errorf("%s's flags:\n%s\nwant\n%s", cmd.Name, strings.Join(names, " "), strings.Join(want[cmd.Name], " "))
		}
	}
	if len(cmds) != len(want) {
		t.Errorf("%d commands, want %d", len(cmds), len(want))
	}
}
