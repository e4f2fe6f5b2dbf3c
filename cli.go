package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/gcpace"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
)

// env is a flag's environment twin, read through the getenv run was given
// rather than the process environment, so tests can set it.
type env struct {
	getenv func(string) string
	key    string
}

func (e env) Lookup() (string, bool) {
	v := e.getenv(e.key)
	return v, v != ""
}
func (e env) String() string   { return "environment variable " + e.key }
func (e env) GoString() string { return "env{" + e.key + "}" }
func (e env) IsFromEnv() bool  { return true }

// Key names the variable, so that --help shows it beside the flag.
func (e env) Key() string { return e.key }

// newCommand builds flowsnap's command line (README.md). Every flag has an
// environment twin named FLOWSNAP_ and the flag in upper case. ready, when
// not nil, receives the address a server listens on once it accepts
// connections.
func newCommand(getenv func(string) string, stdout io.Writer, ready func(addr string)) *cli.Command {
	twin := func(key string) cli.ValueSourceChain {
		return cli.NewValueSourceChain(env{getenv: getenv, key: key})
	}
	// Each command gets flags of its own: a flag shared between the demo and a
	// subcommand loses the value its environment twin gave it.
	dbFlag := func() cli.Flag {
		return &cli.StringFlag{Name: "db", Usage: "the engine store: a SQLite path or file: URI, or a postgres:// URL", Sources: twin("FLOWSNAP_DB"), Required: true, Local: true}
	}
	addrFlag := func() cli.Flag {
		return &cli.StringFlag{Name: "addr", Value: "127.0.0.1:8080", Usage: "where to listen (HOST:PORT; port 0 picks a free one)", Sources: twin("FLOWSNAP_ADDR"), Local: true}
	}
	serveFlags := func() []cli.Flag {
		serveFlags := []cli.Flag{
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "the longest one GraphQL operation may take", Sources: twin("FLOWSNAP_TIMEOUT"), Local: true},
			&cli.IntFlag{Name: "complexity-limit", Value: 100_000, Usage: "the most an operation may cost (connections cost first × their selection)", Sources: twin("FLOWSNAP_COMPLEXITY_LIMIT"), Local: true},
			&cli.IntFlag{Name: "max-depth", Value: 16, Usage: "how deeply an operation's fields may nest", Sources: twin("FLOWSNAP_MAX_DEPTH"), Local: true},
			&cli.BoolFlag{Name: "introspection", Value: true, Usage: "answer introspection queries and serve the GraphiQL explorer at /explorer (the dashboard at / is always served)", Sources: twin("FLOWSNAP_INTROSPECTION"), Local: true},
			&cli.IntFlag{Name: "run-cache-mb", Value: snapshot.DefaultRunCacheBytes >> 20, Usage: "MiB of decoded runs kept on SQLite, so that unchanged runs, a batch or one alone, are read by their revisions alone (0 keeps none)", Sources: twin("FLOWSNAP_RUN_CACHE_MB"), Local: true,
				Validator: func(v int) error {
					if v < 0 {
						return fmt.Errorf("--run-cache-mb %d: want 0 or more", v)
					}
					return nil
				}},
			&cli.IntFlag{Name: "max-readers", Usage: "the most read transactions open at once", DefaultText: "8; on SQLite twice the CPUs, at most 8", Sources: twin("FLOWSNAP_MAX_READERS"), Local: true},
			&cli.StringSliceFlag{Name: "cors-origin", Usage: "an origin whose pages may call /graphql from a browser (repeatable; * for any)", Sources: twin("FLOWSNAP_CORS_ORIGIN"), Local: true},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "text or json", Sources: twin("FLOWSNAP_LOG_FORMAT"), Local: true,
				Validator: func(v string) error {
					if v != "text" && v != "json" {
						return fmt.Errorf("--log-format %q: want text or json", v)
					}
					return nil
				}},
			&cli.DurationFlag{Name: "live-interval", Value: live.DefaultInterval, Usage: "how often subscriptions look for a new revision of the store", Sources: twin("FLOWSNAP_LIVE_INTERVAL"), Local: true},
			&cli.IntFlag{Name: "max-subscriptions", Value: live.DefaultMaxSubscriptions, Usage: "the most subscriptions served at once", Sources: twin("FLOWSNAP_MAX_SUBSCRIPTIONS"), Local: true},
			&cli.StringFlag{Name: "debug-addr", Usage: "where to serve pprof and runtime metrics (HOST:PORT), apart from --addr; off when empty", Sources: twin("FLOWSNAP_DEBUG_ADDR"), Local: true},
			&cli.DurationFlag{Name: "statement-timeout", Value: 2 * time.Second, Usage: "the longest one list or count statement may run before it ends with TIMEOUT (0: only --timeout bounds it)", Sources: twin("FLOWSNAP_STATEMENT_TIMEOUT"), Local: true,
				Validator: func(v time.Duration) error {
					if v < 0 {
						return fmt.Errorf("--statement-timeout %s: want 0 or more", v)
					}
					return nil
				}},
			&cli.IntFlag{Name: "expensive-reads", Usage: "how many list and count statements run at once; others wait up to --statement-timeout for a turn", DefaultText: "a quarter of --max-readers, at least 1", Sources: twin("FLOWSNAP_EXPENSIVE_READS"), Local: true,
				Validator: func(v int) error {
					if v < 0 {
						return fmt.Errorf("--expensive-reads %d: want 0 or more", v)
					}
					return nil
				}},
			&cli.IntFlag{Name: "gc-percent", Value: gcpace.DefaultPercent, Usage: "how far the heap grows past what is live before the garbage collector runs, in percent (GOGC's meaning; a GOGC in the environment wins over the default)", Sources: twin("FLOWSNAP_GC_PERCENT"), Local: true},
		}
		serveFlags = append(serveFlags, replicaFlags(twin)...)
		serveFlags = append(serveFlags, limitFlags(twin)...)
		return serveFlags
	}
	serveConfig := func(cmd *cli.Command) serveOptions {
		return serveOptions{
			addr:            cmd.String("addr"),
			timeout:         cmd.Duration("timeout"),
			complexityLimit: int(cmd.Int("complexity-limit")),
			maxDepth:        cmd.Int("max-depth"),
			introspection:   cmd.Bool("introspection"),
			maxReaders:      cmd.Int("max-readers"),
			runCacheMB:      int(cmd.Int("run-cache-mb")),
			logFormat:       cmd.String("log-format"),
			corsOrigins:     cmd.StringSlice("cors-origin"),
			debugAddr:       cmd.String("debug-addr"),
			limits:          limitConfig(cmd),
			stdout:          stdout,
			replica:         replicaConfig(cmd),
			ready:           ready,

			statementTimeout: cmd.Duration("statement-timeout"),
			expensiveReads:   int(cmd.Int("expensive-reads")),

			liveInterval:     cmd.Duration("live-interval"),
			maxSubscriptions: int(cmd.Int("max-subscriptions")),
			gcPace: func() {
				gcpace.Set(getenv, cmd.Int("gc-percent"), cmd.IsSet("gc-percent"))
			},
		}
	}
	// The demo's flags are its own: without Local every subcommand's help
	// would list them too.
	rootFlags := append([]cli.Flag{
		&cli.StringFlag{Name: "data", Value: "flowsnap-data", Usage: "the demo's data folder", Sources: twin("FLOWSNAP_DATA"), Local: true},
		&cli.IntFlag{Name: "runs", Value: 20_000, Usage: "how many runs the demo seeds into a new store", Sources: twin("FLOWSNAP_RUNS"), Local: true},
		&cli.FloatFlag{Name: "rate", Value: 20, Usage: "the demo engine's transactions per second", Sources: twin("FLOWSNAP_RATE"), Local: true},
		addrFlag(),
	}, serveFlags()...)
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
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 0 {
				return fmt.Errorf("unknown command %q: see flowsnap --help", cmd.Args().First())
			}
			return demo(ctx, demoOptions{
				data:  cmd.String("data"),
				runs:  int(cmd.Int("runs")),
				rate:  cmd.Float("rate"),
				serve: serveConfig(cmd),
			})
		},
		Commands: []*cli.Command{
			{
				Name:  "serve",
				Usage: "serve an existing engine store, read-only",
				Flags: append([]cli.Flag{dbFlag(), addrFlag()}, serveFlags()...),
				Action: func(ctx context.Context, cmd *cli.Command) error {
					return serve(ctx, cmd.String("db"), serveConfig(cmd))
				},
			},
			{
				Name:  "migrate",
				Usage: "create or upgrade an engine store",
				Flags: []cli.Flag{dbFlag()},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					db, err := store.Open(ctx, cmd.String("db"), store.Options{})
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
			{
				Name:  "seed",
				Usage: "fill an engine store with a deterministic, realistic history",
				Flags: []cli.Flag{dbFlag(),
					&cli.IntFlag{Name: "runs", Value: 10_000, Usage: "how many runs to write", Sources: twin("FLOWSNAP_RUNS"), Local: true},
					&cli.Int64Flag{Name: "seed", Value: 1, Usage: "the random seed; the same seed gives the same history", Sources: twin("FLOWSNAP_SEED"), Local: true},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					db, err := openMigrated(ctx, cmd.String("db"))
					if err != nil {
						return err
					}
					defer db.Close()
					start := time.Now()
					stats, err := engine.Seed(ctx, db, engine.SeedOptions{Runs: int(cmd.Int("runs")), Seed: cmd.Int64("seed"), Progress: stdout})
					if err != nil {
						return err
					}
					took := time.Since(start)
					fmt.Fprintf(stdout, "seeded %d runs in %s (%.0f runs/s): %d deleted, %d spawn edges (largest fan-out %d), longest lineage %d rounds, %d steps, %d attempts, %d inbound events\n",
						stats.Runs, took.Round(time.Millisecond), float64(stats.Runs)/took.Seconds(), stats.Deleted,
						stats.Edges, stats.MaxChildren, stats.MaxRounds, stats.Steps, stats.Attempts, stats.InboundEvents)
					return nil
				},
			},
			{
				Name:  "simulate",
				Usage: "keep writing to an engine store like a running engine, until interrupted",
				Flags: []cli.Flag{dbFlag(),
					&cli.FloatFlag{Name: "rate", Value: 20, Usage: "transactions per second", Sources: twin("FLOWSNAP_RATE"), Local: true},
					&cli.Int64Flag{Name: "seed", Value: 1, Usage: "the random seed", Sources: twin("FLOWSNAP_SEED"), Local: true},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					db, err := openMigrated(ctx, cmd.String("db"))
					if err != nil {
						return err
					}
					defer db.Close()
					err = engine.Simulate(ctx, db, engine.SimOptions{Rate: cmd.Float("rate"), Seed: cmd.Int64("seed"), Out: stdout})
					if errors.Is(err, context.Canceled) {
						return nil
					}
					return err
				},
			},
		},
	}
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

// limitFlags are the bounds on one request's document, validation and
// response (endpoint.Options); the defaults leave a dashboard's queries far
// inside them.
func limitFlags(twin func(string) cli.ValueSourceChain) []cli.Flag {
	d := endpoint.DefaultOptions
	return []cli.Flag{
		&cli.IntFlag{Name: "max-tokens", Value: d.MaxTokens, Usage: "the most tokens the parser reads in one document", Sources: twin("FLOWSNAP_MAX_TOKENS"), Local: true},
		&cli.IntFlag{Name: "max-nodes", Value: d.MaxNodes, Usage: "the most fields, fragments and directives one document may hold as written", Sources: twin("FLOWSNAP_MAX_NODES"), Local: true},
		&cli.IntFlag{Name: "max-fields", Value: d.MaxFields, Usage: "the most fields one document may hold with its fragment spreads expanded", Sources: twin("FLOWSNAP_MAX_FIELDS"), Local: true},
		&cli.IntFlag{Name: "max-same-name", Value: d.MaxSameName, Usage: "the most fields of one response name in one selection set", Sources: twin("FLOWSNAP_MAX_SAME_NAME"), Local: true},
		&cli.IntFlag{Name: "max-aliases", Value: d.MaxAliases, Usage: "the most aliased fields in one operation", Sources: twin("FLOWSNAP_MAX_ALIASES"), Local: true},
		&cli.IntFlag{Name: "max-errors", Value: d.MaxErrors, Usage: "the most errors one response carries", Sources: twin("FLOWSNAP_MAX_ERRORS"), Local: true},
		&cli.IntFlag{Name: "max-body-bytes", Value: int(d.MaxBodyBytes), Usage: "the largest request body (and GET query string)", Sources: twin("FLOWSNAP_MAX_BODY_BYTES"), Local: true},
		&cli.IntFlag{Name: "max-response-bytes", Value: d.MaxResponseBytes, Usage: "the largest response data", Sources: twin("FLOWSNAP_MAX_RESPONSE_BYTES"), Local: true},
		&cli.IntFlag{Name: "max-variable-values", Value: d.MaxVariableValues, Usage: "the most values (list elements, object members) one request's variables hold", Sources: twin("FLOWSNAP_MAX_VARIABLE_VALUES"), Local: true},
		&cli.IntFlag{Name: "max-parsing", Value: d.MaxParsing, Usage: "how many new documents (and large bodies) are parsed and validated at once", Sources: twin("FLOWSNAP_MAX_PARSING"), Local: true},
		&cli.IntFlag{Name: "max-parsing-queue", Value: d.MaxParsingQueue, Usage: "how many requests may wait to be parsed; past it they are refused as busy (503)", Sources: twin("FLOWSNAP_MAX_PARSING_QUEUE"), Local: true},
		&cli.IntFlag{Name: "parsing-duty-percent", Value: d.ParsingDutyPercent, Usage: "the share of its time a parsing slot may be busy (100: never rests)", Sources: twin("FLOWSNAP_PARSING_DUTY_PERCENT"), Local: true},
	}
}

func limitConfig(cmd *cli.Command) endpoint.Options {
	return endpoint.Options{
		MaxTokens:          cmd.Int("max-tokens"),
		MaxNodes:           cmd.Int("max-nodes"),
		MaxFields:          cmd.Int("max-fields"),
		MaxSameName:        cmd.Int("max-same-name"),
		MaxAliases:         cmd.Int("max-aliases"),
		MaxErrors:          cmd.Int("max-errors"),
		MaxBodyBytes:       int64(cmd.Int("max-body-bytes")),
		MaxResponseBytes:   cmd.Int("max-response-bytes"),
		MaxVariableValues:  cmd.Int("max-variable-values"),
		MaxParsing:         cmd.Int("max-parsing"),
		MaxParsingQueue:    cmd.Int("max-parsing-queue"),
		ParsingDutyPercent: cmd.Int("parsing-duty-percent"),
	}
}
