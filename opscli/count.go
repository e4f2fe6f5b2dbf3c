package opscli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	gql "github.com/flowsnap/flowsnap/clients/genqlient"
)

func (a *app) countCommand() *cli.Command {
	return &cli.Command{
		Name:  "count",
		Usage: "count the runs the filters select, in all or by status",
		UsageText: `flowsnap runs count [filters] [--by status] [--up-to N] [-o table|json]

Counts up to --up-to (default 10000); a count that reached it is shown as
N+ (json: "capped": true). --by status counts every status in one request,
at one position.

Examples:
   flowsnap runs count --by status
   flowsnap runs count --flow billing --status failed --finished-after 24h`,
		OnUsageError: onUsageError,
		Flags: append(filterFlags(),
			a.outputFlag("table or json", "json"),
			&cli.StringFlag{Name: "by", Usage: "count by `status` (the one grouping there is)"},
			&cli.Int64Flag{Name: "up-to", Value: 10_000, Usage: "count up to `N` (0..1000000): the cost of a count"},
		),
		Action: a.count,
	}
}

func (a *app) count(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	f, err := readFilter(cmd, a.o.now())
	if err != nil {
		return err
	}
	format, err := a.format(cmd, "table", "json")
	if err != nil {
		return err
	}
	by := cmd.String("by")
	if by != "" && by != "status" {
		return usagef("--by %q: the one grouping is status", by)
	}
	c, err := a.client(cmd)
	if err != nil {
		return err
	}
	vars := map[string]any{"filter": f.RunFilter, "upTo": cmd.Int64("up-to")}
	w := a.o.Stdout
	if by == "" {
		var resp gql.OpsCountRunsResponse
		raw, err := c.query(ctx, "OpsCountRuns", gql.OpsCountRuns_Operation, vars, &resp)
		if err != nil {
			return err
		}
		if format == "json" {
			return writeMember(w, raw, "countRuns")
		}
		fmt.Fprintln(w, countText(resp.CountRuns.Count, resp.CountRuns.Capped))
		return nil
	}
	var resp gql.OpsRunStatsResponse
	raw, err := c.query(ctx, "OpsRunStats", gql.OpsRunStats_Operation, vars, &resp)
	if err != nil {
		return err
	}
	if format == "json" {
		return writeMember(w, raw, "runStats")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tCOUNT")
	var total int64
	capped := false
	for _, s := range resp.RunStats {
		fmt.Fprintf(tw, "%s\t%s\n", strings.ToLower(string(s.Status)), countText(s.Count, s.Capped))
		total += s.Count
		capped = capped || s.Capped
	}
	fmt.Fprintf(tw, "total\t%s\n", countText(total, capped))
	return tw.Flush()
}

// countText is a count as a person reads it: N, or N+ when capped.
func countText(n int64, capped bool) string {
	if capped {
		return fmt.Sprintf("%d+", n)
	}
	return fmt.Sprint(n)
}

// writeMember writes one member of a response's data, as the API spelled
// it, indented.
func writeMember(w io.Writer, raw json.RawMessage, name string) error {
	var data map[string]json.RawMessage
	if err := json.Unmarshal(raw, &data); err != nil {
		return err
	}
	return writeIndented(w, data[name])
}

func writeIndented(w io.Writer, raw json.RawMessage) error {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

func (a *app) flowsCommand(global []cli.Flag) *cli.Command {
	return &cli.Command{
		Name:  "flows",
		Usage: "list the flows the runs belong to",
		UsageText: `flowsnap flows [--prefix P] [-o table|json]

Every distinct flow name of the live runs, ascending, each page a snapshot
of its own.

Examples:
   flowsnap flows
   flowsnap flows --prefix billing -o json`,
		OnUsageError: onUsageError,
		Flags: append(global,
			&cli.StringFlag{Name: "prefix", Usage: "only the flows whose name begins with `P`"},
			a.outputFlag("table or json", "json"),
		),
		Action: a.flows,
	}
}

func (a *app) flows(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	format, c, err := a.formatAndClient(cmd, "table", "json")
	if err != nil {
		return err
	}
	var prefix *string
	if cmd.IsSet("prefix") {
		p := cmd.String("prefix")
		prefix = &p
	}
	var names []string
	var after *string
	for {
		var resp gql.OpsFlowsResponse
		if _, err := c.query(ctx, "OpsFlows", gql.OpsFlows_Operation, map[string]any{"first": 200, "after": after, "prefix": prefix}, &resp); err != nil {
			return err
		}
		if resp.Flows == nil {
			return fmt.Errorf("%s answered no page", c.server)
		}
		names = append(names, resp.Flows.Nodes...)
		if !resp.Flows.PageInfo.HasNextPage || resp.Flows.PageInfo.EndCursor == nil {
			break
		}
		after = resp.Flows.PageInfo.EndCursor
	}
	if format == "json" {
		if names == nil {
			names = []string{}
		}
		b, err := json.MarshalIndent(names, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.o.Stdout, "%s\n", b)
		return err
	}
	fmt.Fprintln(a.o.Stdout, "FLOW")
	for _, n := range names {
		fmt.Fprintln(a.o.Stdout, n)
	}
	return nil
}
