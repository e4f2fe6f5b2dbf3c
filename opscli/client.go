package opscli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Khan/genqlient/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// client talks to one flowsnap server through the genqlient operations:
// it keeps the raw data of each response beside the typed one, so that
// json output is the API's own spelling of every value.
type client struct {
	server string // as the user gave it, for messages
	url    string // its /graphql endpoint
	http   *http.Client
	gql    graphql.Client
}

// bearer adds the token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}

func newClient(server, token string) (*client, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("--server %q: want an http:// or https:// URL", server)
	}
	endpoint := strings.TrimSuffix(u.String(), "/")
	if !strings.HasSuffix(endpoint, "/graphql") {
		endpoint += "/graphql"
	}
	var rt http.RoundTripper = http.DefaultTransport
	if token != "" {
		rt = bearer{token: token, next: rt}
	}
	hc := &http.Client{Transport: rt}
	return &client{server: server, url: endpoint, http: hc, gql: graphql.NewClient(endpoint, hc)}, nil
}

// query runs one operation: op is a genqlient operation document and out
// its generated response type. It returns the raw data as well.
func (c *client) query(ctx context.Context, opName, op string, vars any, out any) (json.RawMessage, error) {
	var raw json.RawMessage
	resp := &graphql.Response{Data: &raw}
	err := c.gql.MakeRequest(ctx, &graphql.Request{OpName: opName, Query: op, Variables: vars}, resp)
	if err != nil {
		return nil, c.explain(err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("reading the response of %s: %w", c.server, err)
	}
	return raw, nil
}

// apiError is an error the API answered with: its code and message.
type apiError struct {
	code, msg string
}

func (e *apiError) Error() string {
	if e.code == "" {
		return e.msg
	}
	return e.code + ": " + e.msg
}

// explain turns a failed request into what the operator needs: the API's
// code and message, the HTTP status, or which server could not be reached.
func (c *client) explain(err error) error {
	var list gqlerror.List
	var httpErr *graphql.HTTPError
	switch {
	case errors.As(err, &list) && len(list) > 0:
		return gqlErrors(list)
	case errors.As(err, &httpErr):
		if len(httpErr.Response.Errors) > 0 && codeOf(httpErr.Response.Errors[0]) != "" {
			return gqlErrors(httpErr.Response.Errors)
		}
		msg := ""
		if len(httpErr.Response.Errors) > 0 {
			msg = strings.TrimSpace(httpErr.Response.Errors[0].Message)
		}
		return &apiError{code: fmt.Sprintf("HTTP %d", httpErr.StatusCode), msg: fmt.Sprintf("%s answered %s", c.server, firstLine(msg))}
	}
	return c.unreachable(err)
}

// unreachable says which server could not be reached, and why.
func (c *client) unreachable(err error) error {
	var netErr net.Error
	var opErr *net.OpError
	if errors.As(err, &opErr) || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("cannot reach flowsnap at %s: %w", c.server, err)
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("talking to flowsnap at %s: %w", c.server, err)
}

func gqlErrors(list gqlerror.List) error {
	e := list[0]
	msg := e.Message
	if len(e.Path) > 0 {
		msg += " (at " + e.Path.String() + ")"
	}
	if len(list) > 1 {
		msg += fmt.Sprintf(" (and %d more errors)", len(list)-1)
	}
	return &apiError{code: codeOf(e), msg: msg}
}

func codeOf(e *gqlerror.Error) string {
	c, _ := e.Extensions["code"].(string)
	return c
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// ms is t as the API takes it: UTC, at most millisecond precision.
func ms(t time.Time) *time.Time {
	t = t.UTC().Truncate(time.Millisecond)
	return &t
}
