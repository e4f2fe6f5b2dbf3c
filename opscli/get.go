package opscli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	gql "github.com/flowsnap/flowsnap/clients/genqlient"
)

// maxChildPages bounds how many pages of children get reads to count them
// by status.
const maxChildPages = 10

func (a *app) getCommand() *cli.Command {
	return &cli.Command{
		Name:  "get",
		Usage: "show one run: its failure, steps and attempts, and children by status",
		UsageText: `flowsnap runs get ID [-o table|json]

The table is for people: the run's times, its owner, waiting and
cancellation, why it failed (the failing step, its last error, its
attempts), its steps with their latest attempts, and its children counted
by status (up to ` + fmt.Sprint(maxChildPages*200) + `). json is the run as the API answers it.

Examples:
   flowsnap runs get run-000123
   flowsnap runs get run-000123 -o json | jq .state`,
		OnUsageError: onUsageError,
		Flags:        []cli.Flag{a.outputFlag("table or json", "json")},
		Action:       a.get,
	}
}

func (a *app) get(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 1 {
		return usagef("runs get takes one run id, got %d arguments", cmd.Args().Len())
	}
	id := cmd.Args().First()
	format, c, err := a.formatAndClient(cmd, "table", "json")
	if err != nil {
		return err
	}
	var resp gql.OpsGetRunResponse
	raw, err := c.query(ctx, "OpsGetRun", gql.OpsGetRun_Operation, map[string]any{"id": id}, &resp)
	if err != nil {
		return err
	}
	switch r := resp.Run.(type) {
	case *gql.OpsGetRunRunMissingRun:
		// The API answers a run id it has no run for with a MissingRun;
		// for a command asked for a run, that is a failure.
		if r.Deleted && r.DeletedAtRevision != nil {
			return &apiError{msg: fmt.Sprintf("run %q was deleted (at revision %d)", id, *r.DeletedAtRevision)}
		}
		return &apiError{msg: fmt.Sprintf("no run %q", id)}
	case *gql.OpsGetRunRun:
		if format == "json" {
			return writeMember(a.o.Stdout, raw, "run")
		}
		children, more, err := a.children(ctx, c, r)
		if err != nil {
			return err
		}
		return showRun(a.o.Stdout, r, children, more, timeFormat{now: a.o.now()})
	}
	return fmt.Errorf("%s answered no run for %q", c.server, id)
}

// children counts r's children by status, reading further pages after
// the first, up to maxChildPages; more says there were more.
func (a *app) children(ctx context.Context, c *client, r *gql.OpsGetRunRun) (map[gql.RunStatus]int, bool, error) {
	n := map[gql.RunStatus]int{}
	if r.Children == nil {
		return n, false, nil
	}
	page := &r.Children.OpsChildPage
	for pages := 1; ; pages++ {
		for _, node := range page.Nodes {
			if child, ok := node.(*gql.OpsChildPageNodesRun); ok {
				n[child.Status]++
			}
		}
		switch {
		case !page.PageInfo.HasNextPage:
			return n, false, nil
		case pages == maxChildPages:
			return n, true, nil
		}
		var resp gql.OpsChildrenResponse
		if _, err := c.query(ctx, "OpsChildren", gql.OpsChildren_Operation, map[string]any{"id": r.Id, "after": page.PageInfo.EndCursor}, &resp); err != nil {
			return nil, false, err
		}
		run, ok := resp.Run.(*gql.OpsChildrenRun)
		if !ok || run.Children == nil {
			return n, false, nil // the run went away between the pages
		}
		page = &run.Children.OpsChildPage
	}
}

// showRun writes the human layout of runs get.
func showRun(w io.Writer, r *gql.OpsGetRunRun, children map[gql.RunStatus]int, more bool, tf timeFormat) error {
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(rfc3339ms) + " (" + ago(tf.now, *t) + ")"
	}
	or := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	line("Run", r.Id)
	line("Status", string(r.Status))
	line("Flow", r.FlowName)
	line("Created", at(&r.CreatedAt))
	line("Started", at(r.StartedAt))
	line("Finished", at(r.FinishedAt))
	if r.Owner != nil {
		line("Owner", fmt.Sprintf("%s pid %d (nonce %s)", r.Owner.HostId, r.Owner.Pid, r.Owner.Nonce))
		line("Heartbeat", at(r.HeartbeatAt))
	}
	line("Parent", or(str(r.ParentRunId)))
	line("Lineage", fmt.Sprintf("%s (round %d)", r.LineageId, r.RoundOrdinal))
	if r.Waiting != nil {
		wait := strings.ToLower(string(r.Waiting.Kind))
		if r.Waiting.Reason != wait {
			wait += " (" + r.Waiting.Reason + ")"
		}
		if r.Waiting.WakeAt != nil {
			wait += ", wakes " + at(r.Waiting.WakeAt)
		}
		line("Waiting", wait)
	}
	if r.Cancellation.RequestedAt != nil {
		line("Cancel", "requested "+at(r.Cancellation.RequestedAt))
	}
	if cs := r.CurrentStep; cs != nil && *cs != nil {
		line("Current step", fmt.Sprintf("%s (%s, %s)", (*cs).GetId(), (*cs).GetType(), (*cs).GetState()))
	}
	line("Revision", fmt.Sprint(r.Revision))
	if err := tw.Flush(); err != nil {
		return err
	}
	var steps []gql.OpsGetRunRunStepsStepConnectionNodesStep
	if r.Steps != nil {
		steps = r.Steps.Nodes
	}
	showFailure(w, r, steps)
	if len(steps) > 0 {
		more := ""
		if r.Steps.PageInfo.HasNextPage {
			more = ", the first 200"
		}
		fmt.Fprintf(w, "\nSteps (%d%s)\n", len(steps), more)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  ID\tTYPE\tSTATE\tCREATED\tRESOLVED\tDETAIL")
		for _, s := range steps {
			detail := ""
			switch s := s.(type) {
			case *gql.OpsGetRunRunStepsStepConnectionNodesRunStep:
				detail = fmt.Sprintf("%d attempts", s.AttemptCount)
				if s.MaxAttempts != nil {
					detail += fmt.Sprintf(" of %d", *s.MaxAttempts)
				}
			case *gql.OpsGetRunRunStepsStepConnectionNodesSleepStep:
				detail = "wakes " + ago(tf.now, s.WakeAt)
			case *gql.OpsGetRunRunStepsStepConnectionNodesWaitStep:
				detail = "event " + s.EventName
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", s.GetId(), s.GetType(), s.GetState(), ago(tf.now, s.GetCreatedAt()), or(agoOf(tf.now, s.GetResolvedAt())), detail)
			if rs, ok := s.(*gql.OpsGetRunRunStepsStepConnectionNodesRunStep); ok {
				for _, at := range rs.Attempts {
					if at == nil {
						continue
					}
					fmt.Fprintf(tw, "    #%d\t\t%s\t%s\t%s\t%s\n", at.Number, at.State, ago(tf.now, at.StartedAt), or(agoOf(tf.now, at.EndedAt)), errorText(at.ErrorName, at.ErrorMessage))
				}
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	total := 0
	for _, n := range children {
		total += n
	}
	if total > 0 {
		var parts []string
		for _, s := range gql.AllRunStatus {
			if children[s] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", children[s], strings.ToLower(string(s))))
			}
		}
		counted := fmt.Sprint(total)
		if more {
			counted = fmt.Sprintf("the first %d", total)
		}
		fmt.Fprintf(w, "\nChildren (%s): %s\n", counted, strings.Join(parts, ", "))
	}
	return nil
}

func agoOf(now time.Time, t *time.Time) string {
	if t == nil {
		return ""
	}
	return ago(now, *t)
}

func errorText(name, msg *string) string {
	switch {
	case name != nil && msg != nil:
		return *name + ": " + *msg
	case msg != nil:
		return *msg
	}
	return ""
}

// showFailure writes why a run failed: the failing step (the latest step
// that failed), its last error and its attempts, and the error the run
// recorded in its state.
func showFailure(w io.Writer, r *gql.OpsGetRunRun, steps []gql.OpsGetRunRunStepsStepConnectionNodesStep) {
	var failed *gql.OpsGetRunRunStepsStepConnectionNodesRunStep
	for _, s := range slices.Backward(steps) {
		if rs, ok := s.(*gql.OpsGetRunRunStepsStepConnectionNodesRunStep); ok && rs.State == gql.StepStateFailed {
			failed = rs
			break
		}
	}
	var state struct {
		Error *struct {
			Name    *string `json:"name"`
			Message *string `json:"message"`
		} `json:"error"`
	}
	if r.State != nil { // null beside FORBIDDEN for a credential without payloads
		_ = json.Unmarshal(*r.State, &state) // a state without an error object has none to show
	}
	if failed == nil && (r.Status != gql.RunStatusFailed || state.Error == nil) {
		return
	}
	fmt.Fprintln(w, "\nFailure")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if state.Error != nil {
		fmt.Fprintf(tw, "  Run error\t%s\n", errorText(state.Error.Name, state.Error.Message))
	}
	if failed != nil {
		fmt.Fprintf(tw, "  Failing step\t%s\n", failed.Id)
		if n := len(failed.Attempts); n > 0 && failed.Attempts[n-1] != nil {
			last := failed.Attempts[n-1]
			fmt.Fprintf(tw, "  Last error\t%s (attempt #%d)\n", errorText(last.ErrorName, last.ErrorMessage), last.Number)
		}
		attempts := fmt.Sprint(failed.AttemptCount)
		if failed.MaxAttempts != nil {
			attempts += fmt.Sprintf(" of %d", *failed.MaxAttempts)
		}
		fmt.Fprintf(tw, "  Attempts\t%s\n", attempts)
	}
	_ = tw.Flush() // the writer's errors show at the caller's next write
}
