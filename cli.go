package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/gcpace"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/opscli"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/stats"
	"github.com/flowsnap/flowsnap/store"
)

// opsHooks let tests fix the ops commands' clock, how soon watch
// reconnects and where it says so; a binary leaves them zero.
var opsHooks struct {
	now    func() time.Time
	retry  time.Duration
	stderr io.Writer
}

// twinName is the environment twin of the flag name: FLOWSNAP_ and the name
// in upper case, dashes as underscores (--max-depth, FLOWSNAP_MAX_DEPTH).
func twinName(name string) string {
	return "FLOWSNAP_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// binder binds flags to the fields of a configuration struct (Destination)
// and to their environment twins (Sources), read through getenv.
type binder struct{ getenv func(string) string }

// bind makes f a command's own flag whose value goes to dest, with its
// environment twin.
func bind[T, C any, VC cli.ValueCreator[T, C]](b binder, f *cli.FlagBase[T, C, VC], dest *T) *cli.FlagBase[T, C, VC] {
	f.Destination = dest
	f.Sources = opscli.Twin(b.getenv, twinName(f.Name))
	f.Local = true
	return f
}

// serveFlags are the flags of serve and of the demo, bound to o.
func (b binder) serveFlags(o *serveOptions) []cli.Flag {
	return append([]cli.Flag{
		bind(b, &cli.StringFlag{Name: "addr", Value: "127.0.0.1:8080", Usage: "where to listen (HOST:PORT; port 0 picks a free one)"}, &o.addr),
		bind(b, &cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "the longest one GraphQL operation may take"}, &o.timeout),
		bind(b, &cli.IntFlag{Name: "complexity-limit", Value: 100_000, Usage: "the most an operation may cost (connections cost first × their selection)"}, &o.complexityLimit),
		bind(b, &cli.IntFlag{Name: "max-depth", Value: 16, Usage: "how deeply an operation's fields may nest"}, &o.maxDepth),
		bind(b, &cli.BoolFlag{Name: "introspection", Value: true, Usage: "answer introspection queries and serve the GraphiQL explorer at /explorer (the dashboard at / is always served)"}, &o.introspection),
		bind(b, &cli.IntFlag{Name: "run-cache-mb", Value: snapshot.DefaultRunCacheBytes >> 20, Usage: "MiB of decoded runs kept: on SQLite unchanged runs are read by their revisions alone, on PostgreSQL runs the revision watcher saw unchanged are not read at all (0 keeps none)",
			Validator: func(v int) error {
				if v < 0 {
					return fmt.Errorf("--run-cache-mb %d: want 0 or more", v)
				}
				return nil
			}}, &o.runCacheMB),
		bind(b, &cli.IntFlag{Name: "max-readers", Usage: "the most read transactions open at once", DefaultText: "8; on SQLite twice the CPUs, at most 8"}, &o.maxReaders),
		bind(b, &cli.StringSliceFlag{Name: "cors-origin", Usage: "an origin whose pages may call /graphql from a browser (repeatable; * for any)"}, &o.corsOrigins),
		bind(b, &cli.StringFlag{Name: "log-format", Value: "text", Usage: "text or json",
			Validator: func(v string) error {
				if v != "text" && v != "json" {
					return fmt.Errorf("--log-format %q: want text or json", v)
				}
				return nil
			}}, &o.logFormat),
		bind(b, &cli.DurationFlag{Name: "stale-after", Value: 5 * time.Minute, Usage: "how old a running run's heartbeat may be before it counts as stale (the dashboard marks it; flowsnap_runs_stale counts it)",
			Validator: func(v time.Duration) error {
				if v <= 0 {
					return fmt.Errorf("--stale-after %s: want more than 0", v)
				}
				return nil
			}}, &o.staleAfter),
		bind(b, &cli.DurationFlag{Name: "stats-interval", Value: stats.DefaultInterval, Usage: "the least time between two reads of the workflow metrics (each a read of the whole store, made when /metrics is scraped; 0 reads at every scrape)",
			Validator: func(v time.Duration) error {
				if v < 0 {
					return fmt.Errorf("--stats-interval %s: want 0 or more", v)
				}
				return nil
			}}, &o.stats.Interval),
		bind(b, &cli.IntFlag{Name: "stats-max-flows", Value: stats.DefaultMaxFlows, Usage: "how many flows (those with the most runs) the workflow metrics label by name; the rest are flow=\"other\"",
			Validator: func(v int) error {
				if v < 1 {
					return fmt.Errorf("--stats-max-flows %d: want 1 or more", v)
				}
				return nil
			}}, &o.stats.MaxFlows),
		bind(b, &cli.DurationFlag{Name: "live-interval", Value: live.DefaultInterval, Usage: "how often subscriptions look for a new revision of the store"}, &o.liveInterval),
		bind(b, &cli.IntFlag{Name: "max-subscriptions", Value: live.DefaultMaxSubscriptions, Usage: "the most subscriptions served at once"}, &o.maxSubscriptions),
		bind(b, &cli.StringFlag{Name: "debug-addr", Usage: "where to serve pprof and runtime metrics (HOST:PORT), apart from --addr; off when empty"}, &o.debugAddr),
		bind(b, &cli.IntFlag{Name: "gc-percent", Value: gcpace.DefaultPercent, Usage: "how far the heap grows past what is live before the garbage collector runs, in percent (GOGC's meaning; a GOGC in the environment wins over the default)"}, &o.gcPercent),
		bind(b, &cli.StringSliceFlag{Name: "replica", Usage: "a PostgreSQL hot standby of --db to read from (repeatable; in the environment, comma-separated)"}, &o.replica.dsns),
		bind(b, &cli.DurationFlag{Name: "stale-wait", Value: snapshot.DefaultStaleWait, Usage: "how long a read waits for a replica to reach the revision a client asked for"}, &o.replica.staleWait),
		bind(b, &cli.BoolFlag{Name: "stale-from-primary", Value: true, Usage: "after --stale-wait, read the primary; false answers STALE instead"}, &o.replica.staleFromPrimary),
		bind(b, &cli.DurationFlag{Name: "replica-check-interval", Value: time.Second, Usage: "how often replicas' health and lag are checked"}, &o.replica.checkInterval),
		bind(b, &cli.StringFlag{Name: "max-replica-lag", Value: formatMaxLag(snapshot.DefaultMaxLag), Usage: "how far behind the primary a replica may be and still be read: revisions (1000), time (5s) or both (1000,5s); off for no bound",
			Validator: func(v string) error {
				_, err := parseMaxLag(v)
				return err
			}}, &o.replica.maxLag),
		bind(b, &cli.StringSliceFlag{Name: "allowed-hosts", Usage: "a host name requests may be addressed to besides loopback's and the listen address's (repeatable; * for any); others are answered 421"}, &o.allowedHosts),
		bind(b, &cli.DurationFlag{Name: "statement-timeout", Value: 2 * time.Second, Usage: "the longest one list or count statement may run before it ends with TIMEOUT (0: only --timeout bounds it)",
			Validator: func(v time.Duration) error {
				if v < 0 {
					return fmt.Errorf("--statement-timeout %s: want 0 or more", v)
				}
				return nil
			}}, &o.statementTimeout),
		bind(b, &cli.IntFlag{Name: "expensive-reads", Usage: "how many list and count statements run at once; others wait up to --statement-timeout for a turn", DefaultText: "a quarter of --max-readers, at least 1",
			Validator: func(v int) error {
				if v < 0 {
					return fmt.Errorf("--expensive-reads %d: want 0 or more", v)
				}
				return nil
			}}, &o.expensiveReads),
		bind(b, &cli.StringFlag{Name: "pg-exec-mode", Usage: "how statements run on PostgreSQL: " + strings.Join(store.ExecModes, ", ") + " (behind PgBouncer in transaction pooling mode: describe_exec, exec or simple_protocol)"}, &o.replica.pgExecMode),
	}, append(b.authFlags(o), b.limitFlags(&o.limits)...)...)
}

// limitFlags are the bounds on one request's document, validation and
// response (endpoint.Options), bound to l; the defaults leave a
// dashboard's queries far inside them.
func (b binder) limitFlags(l *endpoint.Options) []cli.Flag {
	d := endpoint.DefaultOptions
	return []cli.Flag{
		bind(b, &cli.IntFlag{Name: "max-tokens", Value: d.MaxTokens, Usage: "the most tokens the parser reads in one document"}, &l.MaxTokens),
		bind(b, &cli.IntFlag{Name: "max-nodes", Value: d.MaxNodes, Usage: "the most fields, fragments and directives one document may hold as written"}, &l.MaxNodes),
		bind(b, &cli.IntFlag{Name: "max-fields", Value: d.MaxFields, Usage: "the most fields one document may hold with its fragment spreads expanded"}, &l.MaxFields),
		bind(b, &cli.IntFlag{Name: "max-same-name", Value: d.MaxSameName, Usage: "the most fields of one response name in one selection set"}, &l.MaxSameName),
		bind(b, &cli.IntFlag{Name: "max-aliases", Value: d.MaxAliases, Usage: "the most aliased fields in one operation"}, &l.MaxAliases),
		bind(b, &cli.IntFlag{Name: "max-errors", Value: d.MaxErrors, Usage: "the most errors one response carries"}, &l.MaxErrors),
		bind(b, &cli.Int64Flag{Name: "max-body-bytes", Value: d.MaxBodyBytes, Usage: "the largest request body (and GET query string)"}, &l.MaxBodyBytes),
		bind(b, &cli.IntFlag{Name: "max-response-bytes", Value: d.MaxResponseBytes, Usage: "the largest response data"}, &l.MaxResponseBytes),
		bind(b, &cli.IntFlag{Name: "max-variable-values", Value: d.MaxVariableValues, Usage: "the most values (list elements, object members) one request's variables hold"}, &l.MaxVariableValues),
		bind(b, &cli.IntFlag{Name: "max-parsing", Value: d.MaxParsing, Usage: "how many new documents (and large bodies) are parsed and validated at once"}, &l.MaxParsing),
		bind(b, &cli.IntFlag{Name: "max-parsing-queue", Value: d.MaxParsingQueue, Usage: "how many requests may wait to be parsed; past it they are refused as busy (503)"}, &l.MaxParsingQueue),
		bind(b, &cli.IntFlag{Name: "parsing-duty-percent", Value: d.ParsingDutyPercent, Usage: "the share of its time a parsing slot may be busy (100: never rests)"}, &l.ParsingDutyPercent),
		bind(b, &cli.DurationFlag{Name: "event-timeout", Usage: "the longest one subscription event may take, from the change it reports to its answer; one over it ends its subscription with TIMEOUT", DefaultText: "--timeout"}, &l.EventTimeout),
		bind(b, &cli.IntFlag{Name: "max-connections", Value: d.MaxConnections, Usage: "the most streams (WebSocket connections and SSE subscriptions together) open at once; past it 503 SUBSCRIPTION_LIMIT"}, &l.MaxConnections),
		bind(b, &cli.IntFlag{Name: "max-connections-per-client", Value: d.MaxConnectionsPerClient, Usage: "the most streams one client (its principal, else its remote address) holds at once"}, &l.MaxConnectionsPerClient),
		bind(b, &cli.IntFlag{Name: "max-subscriptions-per-client", Value: d.MaxSubscriptionsPerClient, Usage: "the most subscriptions one client holds at once, over all its streams"}, &l.MaxSubscriptionsPerClient),
		bind(b, &cli.DurationFlag{Name: "stream-write-timeout", Value: d.StreamWriteTimeout, Usage: "the longest one write to a stream may wait for its client to read; past it the stream is dropped"}, &l.StreamWriteTimeout),
		bind(b, &cli.IntFlag{Name: "max-pings-per-second", Value: d.MaxPingsPerSecond, Usage: "the most ping messages a WebSocket connection has answered a second (in bursts of as many); past it the connection is read no faster"}, &l.MaxPingsPerSecond),
		bind(b, &cli.IntFlag{Name: "max-events", Value: d.MaxEvents, Usage: "how many subscription events are read at once (each slot resting as long as an event held it); others wait their turn"}, &l.MaxEvents),
	}
}

// newCommand builds flowsnap's command line (docs/contract.md#running).
// Each command's flags are bound to a configuration of its own
// (serveOptions, demoOptions, engine.SeedOptions, …), which its action
// passes whole; every flag has an environment twin (twinName), read through
// getenv. ready, when not nil, receives the address a server listens on
// once it accepts connections.
func newCommand(getenv func(string) string, stdout io.Writer, ready func(addr string)) *cli.Command {
	b := binder{getenv: getenv}
	// Each command gets flags and a configuration of its own: a flag shared
	// between the demo and a subcommand loses the value its environment twin
	// gave it.
	var (
		demoOpts         = demoOptions{serve: serveOptions{stdout: stdout, ready: ready, getenv: getenv}}
		serveOpts        = serveOptions{stdout: stdout, ready: ready, getenv: getenv}
		serveDB, adminDB string
		seedOpts         engine.SeedOptions
		simOpts          engine.SimOptions
		seedDB, simDB    string
	)
	gcPace := func(cmd *cli.Command, o *serveOptions) {
		o.gcPace = func() {
			gcpace.Set(getenv, o.gcPercent, cmd.IsSet("gc-percent"))
			gcpace.Limit(getenv)
		}
	}
	dbFlag := func(dest *string) cli.Flag {
		f := bind(b, &cli.StringFlag{Name: "db", Usage: "the engine store: a SQLite path or file: URI, or a postgres:// URL"}, dest)
		f.Required = true
		return f
	}
	// The demo's flags are its own: without Local every subcommand's help
	// would list them too.
	rootFlags := append([]cli.Flag{
		bind(b, &cli.StringFlag{Name: "data", Value: "flowsnap-data", Usage: "the demo's data folder"}, &demoOpts.data),
		bind(b, &cli.IntFlag{Name: "runs", Value: 20_000, Usage: "how many runs the demo seeds into a new store"}, &demoOpts.runs),
		bind(b, &cli.FloatFlag{Name: "rate", Value: 20, Usage: "the demo engine's transactions per second"}, &demoOpts.rate),
	}, b.serveFlags(&demoOpts.serve)...)
	return &cli.Command{
		Name:      "flowsnap",
		Usage:     "serve a workflow engine's state over GraphQL, as consistent snapshots",
		UsageText: "flowsnap [demo flags]          run the demo on an embedded SQLite store\n   flowsnap COMMAND [flags]",
		Version:   version(),
		Writer:    stdout,
		ErrWriter: stdout,
		// Errors are returned to main, which prints them once.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		Flags:          rootFlags,
		// `flowsnap completion bash|zsh|fish|pwsh` prints a completion script.
		EnableShellCompletion: true,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 0 {
				return fmt.Errorf("unknown command %q: see flowsnap --help", cmd.Args().First())
			}
			gcPace(cmd, &demoOpts.serve)
			return demo(ctx, demoOpts)
		},
		Commands: append([]*cli.Command{
			{
				Name:  "serve",
				Usage: "serve an existing engine store, read-only",
				Flags: append([]cli.Flag{dbFlag(&serveDB)}, b.serveFlags(&serveOpts)...),
				Action: func(ctx context.Context, cmd *cli.Command) error {
					gcPace(cmd, &serveOpts)
					return serve(ctx, serveDB, serveOpts)
				},
			},
			{
				Name:  "migrate",
				Usage: "create or upgrade an engine store",
				Flags: []cli.Flag{dbFlag(&adminDB)},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					db, err := store.Open(ctx, adminDB, store.Options{})
					if err != nil {
						return err
					}
					defer db.Close()
					from, to, err := db.Migrate(ctx)
					if err != nil {
						return err
					}
					if from == to {
						fmt.Fprintf(stdout, "%s is at schema version %d, nothing to do\n", db, to)
					} else {
						fmt.Fprintf(stdout, "%s migrated from schema version %d to %d\n", db, from, to)
					}
					return nil
				},
			},
			healthcheckCommand(b, stdout),
			writerCommand("seed", "fill an engine store with a deterministic, realistic history", dbFlag(&seedDB), []cli.Flag{
				bind(b, &cli.IntFlag{Name: "runs", Value: 10_000, Usage: "how many runs to write"}, &seedOpts.Runs),
				bind(b, &cli.Int64Flag{Name: "seed", Value: 1, Usage: "the random seed; the same seed gives the same history"}, &seedOpts.Seed),
			}, func(ctx context.Context) error {
				return withMigrated(ctx, seedDB, func(db *store.DB) error { return seed(ctx, db, seedOpts, stdout) })
			}),
			writerCommand("simulate", "keep writing to an engine store like a running engine, until interrupted", dbFlag(&simDB), []cli.Flag{
				bind(b, &cli.FloatFlag{Name: "rate", Value: 20, Usage: "transactions per second"}, &simOpts.Rate),
				bind(b, &cli.Int64Flag{Name: "seed", Value: 1, Usage: "the random seed"}, &simOpts.Seed),
			}, func(ctx context.Context) error {
				return withMigrated(ctx, simDB, func(db *store.DB) error {
					simOpts.Out = stdout
					err := engine.Simulate(ctx, db, simOpts)
					if errors.Is(err, context.Canceled) {
						return nil
					}
					return err
				})
			}),
		}, opscli.Commands(opscli.Options{Getenv: getenv, Stdout: stdout, Stderr: cmp.Or[io.Writer](opsHooks.stderr, os.Stderr),
			Now: opsHooks.now, Retry: opsHooks.retry})...),
	}
}

// seed writes a history to db and says what it wrote.
func seed(ctx context.Context, db *store.DB, opts engine.SeedOptions, stdout io.Writer) error {
	start := time.Now()
	opts.Progress = stdout
	stats, err := engine.Seed(ctx, db, opts)
	if err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Fprintf(stdout, "seeded %d runs in %s (%.0f runs/s): %d deleted, %d spawn edges (largest fan-out %d), longest lineage %d rounds, %d steps, %d attempts, %d inbound events\n",
		stats.Runs, took.Round(time.Millisecond), float64(stats.Runs)/took.Seconds(), stats.Deleted,
		stats.Edges, stats.MaxChildren, stats.MaxRounds, stats.Steps, stats.Attempts, stats.InboundEvents)
	return nil
}

// writerCommand is a command that writes to the store --db names: its
// flags after db, and what it does once they are read.
func writerCommand(name, usage string, db cli.Flag, flags []cli.Flag, do func(ctx context.Context) error) *cli.Command {
	return &cli.Command{Name: name, Usage: usage, Flags: append([]cli.Flag{db}, flags...),
		Action: func(ctx context.Context, _ *cli.Command) error { return do(ctx) }}
}

// withMigrated opens dsn for writing, brings its schema up to date, and
// runs do with it.
func withMigrated(ctx context.Context, dsn string, do func(db *store.DB) error) error {
	db, err := openMigrated(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	return do(db)
}

// build is the module version, VCS revision and Go version the binary was
// built from, as the Go toolchain recorded them ("unknown" where it did not).
type build struct {
	version, revision, goVersion string
	modified                     bool
}

func buildInfo() build {
	b := build{version: "unknown", revision: "unknown", goVersion: "unknown"}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.version, b.goVersion = info.Main.Version, info.GoVersion
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.revision = s.Value
		case "vcs.modified":
			b.modified = s.Value == "true"
		}
	}
	return b
}

// version is what --version prints.
func version() string {
	b := buildInfo()
	v := b.version
	if b.revision != "unknown" {
		v += " (revision " + b.revision
		if b.modified {
			v += ", modified"
		}
		v += ")"
	}
	return v + ", " + b.goVersion
}

// openMigrated opens dsn for writing and brings its schema up to date.
func openMigrated(ctx context.Context, dsn string) (*store.DB, error) {
	db, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		return nil, err
	}
	if _, _, err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
