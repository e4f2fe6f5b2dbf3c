package opscli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
	"github.com/vektah/gqlparser/v2/gqlerror"

	gql "github.com/flowsnap/flowsnap/clients/genqlient"
)

func (a *app) watchCommand() *cli.Command {
	return &cli.Command{
		Name:  "watch",
		Usage: "print a line for each change of a run the filters select, until interrupted",
		UsageText: `flowsnap runs watch [filters] [--since REVISION] [-o table|ndjson]

Follows the change feed over Server-Sent Events from now, or from after
--since REVISION. A dropped connection (a server restart) is retried, and
the feed resumes after the last revision printed, so no change is missed;
a store that was replaced ends the watch with SOURCE_CHANGED. Changes of one
run that come together are printed once, at its latest revision. Deleted
runs are printed only without filters.

Examples:
   flowsnap runs watch --status failed
   flowsnap runs watch --flow billing --since 120000 -o ndjson`,
		OnUsageError: onUsageError,
		Flags: append(filterFlags(),
			a.outputFlag("table or ndjson", "ndjson"),
			&cli.Int64Flag{Name: "since", Usage: "start after `REVISION` rather than now"},
		),
		Action: a.watch,
	}
}

// feed is where a watch stands in the change feed.
type feed struct {
	since  int64
	source *string // the store's identity, once known: a resumed feed must be of the same store
}

func (a *app) watch(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	f, err := readFilter(cmd, a.o.now())
	if err != nil {
		return err
	}
	format, c, err := a.formatAndClient(cmd, "table", "ndjson")
	if err != nil {
		return err
	}
	var at feed
	if cmd.IsSet("since") {
		if at.since = cmd.Int64("since"); at.since < 0 {
			return usagef("--since %d: want a revision, 0 or more", at.since)
		}
	} else {
		var resp gql.OpsPositionResponse
		if _, err := c.query(ctx, "OpsPosition", gql.OpsPosition_Operation, nil, &resp); err != nil {
			return err
		}
		at.since, at.source = resp.Position.Revision, &resp.Position.Source
	}
	retry := a.o.Retry
	if retry == 0 {
		retry = time.Second
	}
	for {
		err := a.follow(ctx, c, &at, f, format)
		if ctx.Err() != nil {
			return nil // interrupted: the watch is done
		}
		// What passes (a server starting, busy or behind) is retried; what
		// the API says of the request itself ends the watch.
		var api *apiError
		if errors.As(err, &api) && !slices.Contains(retried, api.code) {
			return err
		}
		fmt.Fprintf(a.o.stderr(), "flowsnap: %v; resuming after revision %d in %s\n", err, at.since, retry)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retry):
		}
	}
}

// retried are the codes of refusals that pass: watch subscribes again.
var retried = []string{"UNAVAILABLE", "TIMEOUT", "PERSISTENCE_FAILED", "STALE", "SUBSCRIPTION_LIMIT", "HTTP 502", "HTTP 503", "HTTP 504"}

// errEnded is a feed the server ended: on shutdown, say.
var errEnded = errors.New("the server ended the change feed")

// follow subscribes to the change feed after at and prints the changes of
// the runs f selects until the stream ends, advancing at past each batch it
// printed. It returns why the stream ended.
func (a *app) follow(ctx context.Context, c *client, at *feed, f filter, format string) error {
	vars := map[string]any{"since": at.since, "source": at.source}
	body, _ := json.Marshal(map[string]any{"operationName": "OpsWatch", "query": gql.OpsWatch_Operation, "variables": vars}) // plain values always marshal
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	res, err := c.http.Do(req)
	if err != nil {
		return c.unreachable(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		var r struct{ Errors gqlerror.List }
		if json.Unmarshal(b, &r) == nil && len(r.Errors) > 0 {
			return gqlErrors(r.Errors)
		}
		return &apiError{code: fmt.Sprintf("HTTP %d", res.StatusCode), msg: fmt.Sprintf("%s answered %s", c.server, firstLine(string(b)))}
	}
	return readEvents(res.Body, func(event string, data []byte) error {
		if event == "complete" {
			return errEnded
		}
		if event != "next" {
			return nil
		}
		return a.batch(at, f, format, data)
	})
}

// batch prints one event of the feed: a batch of changes.
func (a *app) batch(at *feed, f filter, format string, data []byte) error {
	var msg struct {
		Data       json.RawMessage
		Errors     gqlerror.List
		Extensions struct{ Position struct{ Source string } }
	}
	if err := json.Unmarshal(data, &msg); err != nil {
		return fmt.Errorf("reading an event of the change feed: %w", err)
	}
	if len(msg.Errors) > 0 {
		return gqlErrors(msg.Errors)
	}
	var resp gql.OpsWatchResponse
	var raw struct {
		Changes struct{ Changes []json.RawMessage }
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return fmt.Errorf("reading an event of the change feed: %w", err)
	}
	if err := json.Unmarshal(msg.Data, &raw); err != nil {
		return fmt.Errorf("reading an event of the change feed: %w", err)
	}
	now := a.o.now()
	w := a.o.Stdout
	for i, ch := range resp.Changes.Changes {
		run, live := ch.Run.(*gql.OpsWatchChangesChangeFeedChangesChangeRun)
		switch {
		case !live && f.set:
			continue // a deleted run has nothing left to match
		case live && !f.match(&run.OpsRun, parentID(run), now):
			continue
		}
		if format == "ndjson" {
			fmt.Fprintf(w, "%s\n", raw.Changes.Changes[i])
			continue
		}
		if !live {
			fmt.Fprintf(w, "%d  %s  DELETED\n", ch.Revision, ch.RunId)
			continue
		}
		detail := ""
		switch {
		case run.FinishedAt != nil:
			detail = "finished " + ago(now, *run.FinishedAt)
		case run.Waiting != nil:
			detail = "waiting " + strings.ToLower(string(run.Waiting.Kind))
		case run.HeartbeatAt != nil:
			detail = "heartbeat " + ago(now, *run.HeartbeatAt)
		}
		fmt.Fprintf(w, "%d  %s  %s  %s  %s\n", ch.Revision, ch.RunId, run.Status, run.FlowName, detail)
	}
	at.since = resp.Changes.NextRevision
	if s := msg.Extensions.Position.Source; s != "" && at.source == nil {
		at.source = &s
	}
	return nil
}

func parentID(r *gql.OpsWatchChangesChangeFeedChangesChangeRun) *string {
	switch p := r.Parent.(type) {
	case *gql.OpsWatchChangesChangeFeedChangesChangeRunParentRun:
		return &p.Id
	case *gql.OpsWatchChangesChangeFeedChangesChangeRunParentMissingRun:
		return &p.Id
	}
	return nil
}

// readEvents reads a Server-Sent Events stream and hands each event's type
// and data to fn, until the stream ends (io.ErrUnexpectedEOF: the
// connection was dropped) or fn returns an error.
func readEvents(r io.Reader, fn func(event string, data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	event, data := "", []byte(nil)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if event != "" || data != nil {
				if event == "" {
					event = "message"
				}
				if err := fn(event, data); err != nil {
					return err
				}
			}
			event, data = "", nil
		case strings.HasPrefix(line, ":"): // a comment: keep-alive
		default:
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch name {
			case "event":
				event = value
			case "data":
				if data != nil {
					data = append(data, '\n')
				}
				data = append(data, value...)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("the change feed was cut: %w", err)
	}
	return fmt.Errorf("the change feed was cut: %w", io.ErrUnexpectedEOF)
}
