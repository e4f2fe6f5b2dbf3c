package opscli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	gql "github.com/flowsnap/flowsnap/clients/genqlient"
)

// filterFlags are the flags that select runs, shared by list, count and
// watch (docs/contract.md#ops-cli).
func filterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "status", Usage: "runs in any of these statuses (comma-separated: " + lowerList(gql.AllRunStatus) + ")"},
		&cli.StringFlag{Name: "flow", Usage: "runs of this flow (its exact name)"},
		&cli.StringFlag{Name: "parent", Usage: "runs whose parentRunId is this run"},
		&cli.StringFlag{Name: "execution-parent", Usage: "runs whose effective parent is this run"},
		&cli.StringFlag{Name: "lineage", Usage: "every round of this lineage"},
		&cli.BoolFlag{Name: "roots", Usage: "only runs without an effective parent"},
		&cli.StringSliceFlag{Name: "waiting-kind", Usage: "runs waiting for any of these kinds (" + lowerList(gql.AllWaitingKind) + ")"},
		&cli.StringFlag{Name: "waiting-reason", Usage: "runs waiting for this exact reason"},
		&cli.BoolFlag{Name: "cancel-requested", Usage: "runs whose cancellation was requested and that have not finished"},
		&cli.StringFlag{Name: "created-after", Usage: "created at or after `T` (RFC 3339, or an age: 90m, 24h, 7d)"},
		&cli.StringFlag{Name: "created-before", Usage: "created before `T`"},
		&cli.StringFlag{Name: "finished-after", Usage: "finished at or after `T`"},
		&cli.StringFlag{Name: "finished-before", Usage: "finished before `T`"},
		&cli.StringFlag{Name: "stale", Usage: "running runs whose last heartbeat is older than `D` (90s, 5m, 1d)"},
	}
}

// filter is what the filter flags ask, as the API's RunFilter, and the
// instant the ages in them were read against.
type filter struct {
	gql.RunFilter
	set   bool          // any flag was given
	stale time.Duration // --stale, which watch reads against each change's time
}

// readFilter reads the filter flags of cmd; ages count back from now.
func readFilter(cmd *cli.Command, now time.Time) (filter, error) {
	var f filter
	str := func(name string) *string {
		if !cmd.IsSet(name) {
			return nil
		}
		f.set = true
		v := cmd.String(name)
		return &v
	}
	var err error
	if cmd.IsSet("status") {
		f.set = true
		if f.Status, err = enumValues("status", cmd.StringSlice("status"), gql.AllRunStatus); err != nil {
			return f, err
		}
	}
	if cmd.IsSet("waiting-kind") {
		f.set = true
		if f.WaitingKind, err = enumValues("waiting-kind", cmd.StringSlice("waiting-kind"), gql.AllWaitingKind); err != nil {
			return f, err
		}
	}
	f.FlowName, f.ParentRunId, f.ExecutionParentId = str("flow"), str("parent"), str("execution-parent")
	f.LineageId, f.WaitingReason = str("lineage"), str("waiting-reason")
	if cmd.Bool("roots") {
		f.set, f.RootsOnly = true, ptr(true)
	}
	if cmd.Bool("cancel-requested") {
		f.set, f.CancelRequested = true, ptr(true)
	}
	for _, t := range []struct {
		flag string
		dst  **time.Time
	}{{"created-after", &f.CreatedAfter}, {"created-before", &f.CreatedBefore},
		{"finished-after", &f.FinishedAfter}, {"finished-before", &f.FinishedBefore}} {
		if v := str(t.flag); v != nil {
			at, err := parseTime(*v, now)
			if err != nil {
				return f, usagef("--%s %q: %v", t.flag, *v, err)
			}
			*t.dst = ms(at)
		}
	}
	if v := str("stale"); v != nil {
		d, err := parseAge(*v)
		if err != nil {
			return f, usagef("--stale %q: %v", *v, err)
		}
		f.stale, f.HeartbeatBefore = d, ms(now.Add(-d))
	}
	return f, nil
}

// enumValue reads an enum value in any case: failed, FAILED.
// enumValues reads the values given to --flag, each one of all.
func enumValues[T ~string](flag string, given []string, all []T) ([]T, error) {
	out := []T{}
	for _, s := range given {
		v, err := enumValue("--"+flag, s, all)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func enumValue[T ~string](flag, s string, all []T) (T, error) {
	v := T(strings.ToUpper(strings.TrimSpace(s)))
	if !slices.Contains(all, v) {
		return "", usagef("%s %q: want one of %s", flag, s, lowerList(all))
	}
	return v, nil
}

func lowerList[T ~string](all []T) string {
	out := make([]string, len(all))
	for i, v := range all {
		out[i] = strings.ToLower(string(v))
	}
	return strings.Join(out, ", ")
}

// parseTime reads an instant: RFC 3339, or an age before now (90m, 24h,
// 7d).
func parseTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := parseAge(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want an RFC 3339 time (2026-12-03T10:00:00Z) or an age (90m, 24h, 7d)")
	}
	return now.Add(-d), nil
}

// parseAge reads a positive duration: Go's units (90s, 5m, 1h30m) and
// days (7d, 1d12h).
func parseAge(s string) (time.Duration, error) {
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil {
			return 0, fmt.Errorf("want a duration such as 90s, 5m, 24h or 7d")
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
	}
	var rest time.Duration
	if s != "" {
		var err error
		if rest, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("want a duration such as 90s, 5m, 24h or 7d")
		}
	}
	if d := days + rest; d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("want a duration above zero")
}

func ptr[T any](v T) *T { return &v }

// match is the filter applied to one run, as the API applies it to a list:
// watch follows the change feed, which is not filtered, and keeps the runs
// that match. parent is the run's effective parent; now is the instant
// --stale counts back from.
func (f filter) match(r *gql.OpsRun, parent *string, now time.Time) bool {
	eq := func(want, got *string) bool { return want == nil || (got != nil && *got == *want) }
	in := func(t time.Time, after, before *time.Time) bool {
		return (after == nil || !t.Before(*after)) && (before == nil || t.Before(*before))
	}
	var reason *string
	if r.Waiting != nil {
		reason = &r.Waiting.Reason
	}
	return (f.Status == nil || slices.Contains(f.Status, r.Status)) &&
		eq(f.FlowName, &r.FlowName) && eq(f.ParentRunId, r.ParentRunId) && eq(f.ExecutionParentId, parent) &&
		eq(f.LineageId, &r.LineageId) && eq(f.WaitingReason, reason) &&
		(f.WaitingKind == nil || (r.Waiting != nil && slices.Contains(f.WaitingKind, r.Waiting.Kind))) &&
		(f.RootsOnly == nil || parent == nil) &&
		(f.CancelRequested == nil || (r.Cancellation.RequestedAt != nil && r.FinishedAt == nil)) &&
		in(r.CreatedAt, f.CreatedAfter, f.CreatedBefore) &&
		(f.FinishedAfter == nil && f.FinishedBefore == nil || (r.FinishedAt != nil && in(*r.FinishedAt, f.FinishedAfter, f.FinishedBefore))) &&
		(f.stale == 0 || (r.Status == gql.RunStatusRunning && r.HeartbeatAt != nil && r.HeartbeatAt.Before(now.Add(-f.stale))))
}
