// Package opscli is flowsnap's command line for operators: `flowsnap runs
// list|count|get|watch` and `flowsnap flows`, which ask a running flowsnap
// server over HTTP through the typed client generated from the schema
// (clients/genqlient). Nothing here reads a store. The commands, flags,
// output formats and exit codes are in docs/contract.md#ops-cli.
package opscli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v3"

	gql "github.com/flowsnap/flowsnap/clients/genqlient"
)

// Options are what the commands need from the process around them.
type Options struct {
	// Getenv reads the environment twins of the flags (FLOWSNAP_SERVER,
	// FLOWSNAP_TOKEN).
	Getenv func(string) string
	// Stdout receives the output.
	Stdout io.Writer
	// Stderr receives what watch says when it reconnects; nothing when nil.
	Stderr io.Writer
	// Now is the clock ages and relative times count from; time.Now when nil.
	Now func() time.Time
	// Terminal says whether Stdout is a terminal, which makes table the
	// default format; when nil, Stdout is a terminal when it is an *os.File
	// that isatty says is one.
	Terminal func() bool
	// Retry is how long watch waits before it reconnects; 1s when zero.
	Retry time.Duration
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o Options) stderr() io.Writer {
	if o.Stderr == nil {
		return io.Discard
	}
	return o.Stderr
}

func (o Options) terminal() bool {
	if o.Terminal != nil {
		return o.Terminal()
	}
	f, ok := o.Stdout.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// env is a flag's environment twin, read through a getenv function rather
// than the process environment, so that tests can set it.
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

// Twin is the value source of a flag whose environment twin is key, read
// through getenv: every flag of flowsnap's command line has one.
func Twin(getenv func(string) string, key string) cli.ValueSourceChain {
	return cli.NewValueSourceChain(env{getenv: getenv, key: key})
}

// DefaultServer is where the commands look for flowsnap without --server.
const DefaultServer = "http://127.0.0.1:8080"

// Commands are the ops commands, to add to flowsnap's command line.
func Commands(o Options) []*cli.Command {
	twin := func(key string) cli.ValueSourceChain { return Twin(o.Getenv, key) }
	// --server and --token are set on runs and flows and hold for every
	// subcommand below them.
	global := func() []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "server", Value: DefaultServer, Usage: "the flowsnap server to ask", Sources: twin("FLOWSNAP_SERVER")},
			&cli.StringFlag{Name: "token", Usage: "a bearer token, sent as Authorization: Bearer (for a server with authentication)", Sources: twin("FLOWSNAP_TOKEN")},
		}
	}
	a := &app{o: o}
	return []*cli.Command{
		{
			Name:         "runs",
			Usage:        "list, count, inspect and watch the runs a flowsnap server serves",
			Flags:        global(),
			OnUsageError: onUsageError,
			Commands:     []*cli.Command{a.listCommand(), a.countCommand(), a.getCommand(), a.watchCommand()},
		},
		a.flowsCommand(global()),
	}
}

// app is the state the commands share.
type app struct{ o Options }

// client is the API client of cmd's --server and --token.
func (a *app) client(cmd *cli.Command) (*client, error) {
	return newClient(cmd.String("server"), cmd.String("token"))
}

// formatAndClient is format and client, for a command that needs both.
func (a *app) formatAndClient(cmd *cli.Command, allowed ...string) (string, *client, error) {
	format, err := a.format(cmd, allowed...)
	if err != nil {
		return "", nil, err
	}
	c, err := a.client(cmd)
	return format, c, err
}

// format reads -o: one of allowed, table by default on a terminal and the
// second allowed format (json or ndjson) otherwise.
func (a *app) format(cmd *cli.Command, allowed ...string) (string, error) {
	f := cmd.String("output")
	if f == "" {
		if a.o.terminal() {
			return "table", nil
		}
		return allowed[1], nil
	}
	for _, v := range allowed {
		if f == v {
			return f, nil
		}
	}
	return "", usagef("-o %q: want one of %v", f, allowed)
}

// outputFlag is -o; piped is the format when stdout is not a terminal.
func (a *app) outputFlag(formats, piped string) cli.Flag {
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "the output format: " + formats + " (default: table on a terminal, else " + piped + ")"}
}

// noArgs refuses arguments a command does not take.
func noArgs(cmd *cli.Command) error {
	if cmd.Args().Len() > 0 {
		return usagef("%s takes no arguments, got %q (filters are flags: see --help)", cmd.FullName(), cmd.Args().Slice())
	}
	return nil
}

func (a *app) listCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list the runs the filters select",
		UsageText: `flowsnap runs list [filters] [-o table|json|ndjson|csv] [--limit N | --all] [--fields a,b] [--order newest|oldest|finished]

Each page is read in a snapshot of its own: with --all (or a --limit above
200) a run that changes between pages may be missing or listed under its
new state, never twice. The list is newest first by creation, or by finish
time (finished runs only) with --order finished, the default when a
--finished-after or --finished-before filter is given.

Examples:
   flowsnap runs list --status failed --flow billing --finished-after 24h
   flowsnap runs list --stale 5m -o json
   flowsnap runs list --created-after 7d --all -o csv --fields id,status,created > runs.csv`,
		OnUsageError: onUsageError,
		Flags: append(filterFlags(),
			a.outputFlag("table, json, ndjson or csv", "ndjson"),
			&cli.IntFlag{Name: "limit", Value: 100, Usage: "list at most `N` runs"},
			&cli.BoolFlag{Name: "all", Usage: "page through to the end of the list (each page its own snapshot)"},
			&cli.StringSliceFlag{Name: "fields", Usage: "the columns, comma-separated (" + fieldNames() + "; API names work too)"},
			&cli.StringFlag{Name: "order", Usage: "newest, oldest or finished (finished runs only, the latest finished first)"},
		),
		Action: a.list,
	}
}

func (a *app) list(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	now := a.o.now()
	f, err := readFilter(cmd, now)
	if err != nil {
		return err
	}
	format, err := a.format(cmd, "table", "ndjson", "json", "csv")
	if err != nil {
		return err
	}
	fs, err := pickFields(cmd.StringSlice("fields"), format)
	if err != nil {
		return err
	}
	order := gql.RunOrderNewestFirst
	if f.FinishedAfter != nil || f.FinishedBefore != nil {
		order = gql.RunOrderFinishedNewestFirst
	}
	if cmd.IsSet("order") {
		o, ok := map[string]gql.RunOrder{"newest": gql.RunOrderNewestFirst, "oldest": gql.RunOrderOldestFirst, "finished": gql.RunOrderFinishedNewestFirst}[cmd.String("order")]
		if !ok {
			return usagef("--order %q: want newest, oldest or finished", cmd.String("order"))
		}
		order = o
	}
	limit := cmd.Int("limit")
	if cmd.Bool("all") {
		if cmd.IsSet("limit") {
			return usagef("--limit and --all: give one")
		}
		limit = -1
	} else if limit < 1 {
		return usagef("--limit %d: want 1 or more", limit)
	}
	c, err := a.client(cmd)
	if err != nil {
		return err
	}
	out := newRunWriter(a.o.Stdout, format, fs, timeFormat{now: now, relative: format == "table"})
	err = pages(ctx, c, f.RunFilter, order, limit, func(r *gql.OpsRun, raw json.RawMessage) error { return out.add(r, raw) })
	if cerr := out.close(); err == nil {
		err = cerr
	}
	return err
}

// pages lists the runs of filter in order, up to limit (all when
// negative), a page of at most 200 per request, each in its own snapshot.
func pages(ctx context.Context, c *client, filter gql.RunFilter, order gql.RunOrder, limit int, each func(*gql.OpsRun, json.RawMessage) error) error {
	var after *string
	for n := 0; limit < 0 || n < limit; {
		first := 200
		if limit >= 0 {
			first = min(first, limit-n)
		}
		var resp gql.OpsListRunsResponse
		raw, err := c.query(ctx, "OpsListRuns", gql.OpsListRuns_Operation, map[string]any{"filter": filter, "order": order, "first": first, "after": after}, &resp)
		if err != nil {
			return err
		}
		var rawPage struct {
			ListRuns struct {
				Edges []struct{ Node json.RawMessage }
			}
		}
		if err := json.Unmarshal(raw, &rawPage); err != nil {
			return fmt.Errorf("reading the response of %s: %w", c.server, err)
		}
		conn := resp.ListRuns
		if conn == nil {
			return fmt.Errorf("%s answered no page", c.server)
		}
		for i, e := range conn.Edges {
			run, ok := e.Node.(*gql.OpsListRunsListRunsRunConnectionEdgesRunEdgeNodeRun)
			if !ok {
				continue // a run deleted at the page's position is no run to list
			}
			if err := each(&run.OpsRun, rawPage.ListRuns.Edges[i].Node); err != nil {
				return err
			}
			n++
		}
		if !conn.PageInfo.HasNextPage || conn.PageInfo.EndCursor == nil {
			return nil
		}
		after = conn.PageInfo.EndCursor
	}
	return nil
}
