package endpoint

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/auth"
	"github.com/flowsnap/flowsnap/endpoint/record"
	"github.com/flowsnap/flowsnap/fault"
)

// CloseUnauthenticated is the WebSocket close code of a connection whose
// connection_init carries no valid credential (docs/contract.md#credentials).
const CloseUnauthenticated = 4401

// authenticate returns the principal of r's bearer token. A WebSocket
// upgrade without an Authorization header is let through with no
// principal: its credential may come in its connection_init payload
// (wsInit).
func (e *endpoint) authenticate(r *http.Request) (*access.Principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		if r.Header.Get("Upgrade") != "" {
			return nil, nil
		}
		// A CORS preflight carries no credential by design; check refuses
		// those the CORS middleware did not answer.
		if r.Method == http.MethodOptions {
			return nil, nil
		}
		return nil, auth.NoCredential
	}
	return Authenticate(r.Context(), e.opts.Authenticator, h)
}

// Authenticate returns the principal of an Authorization value (an HTTP
// header, or a connection_init payload's member): a bearer token that a
// accepts. Every error it returns is UNAUTHENTICATED.
func Authenticate(ctx context.Context, a auth.Authenticator, authorization string) (*access.Principal, error) {
	token, ok := auth.Bearer(authorization)
	if !ok {
		return nil, auth.Refuse("the Authorization must be a bearer token: Authorization: Bearer <token>")
	}
	return a.Authenticate(ctx, token)
}

// Challenge is the WWW-Authenticate header of a 401 answer: the scheme,
// and whether a token was sent and refused (RFC 6750, section 3).
func Challenge(r *http.Request) string {
	if r.Header.Get("Authorization") == "" {
		return `Bearer realm="flowsnap"`
	}
	return `Bearer realm="flowsnap", error="invalid_token"`
}

// refuseUnauthenticated answers 401 with the error's message and code,
// and records the refusal.
func refuseUnauthenticated(w http.ResponseWriter, r *http.Request, rec *record.Record, err error) {
	code, msg := fault.CodeOf(err), fault.MessageOf(err)
	rec.Refuse(record.ReasonOf(code), code, msg)
	w.Header().Set("WWW-Authenticate", Challenge(r))
	writeError(w, responseMedia(r), http.StatusUnauthorized, code, msg)
}

// wsInit authenticates a WebSocket connection at its connection_init: the
// payload's authorization member when it has one, else the principal the
// upgrade request's header gave. Without either the connection is closed
// with CloseUnauthenticated.
func wsInit(opts Options) transport.WebsocketInitFunc {
	a := opts.Authenticator
	return func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
		var err error
		if h := payload.Authorization(); h != "" {
			var p *access.Principal
			if p, err = Authenticate(ctx, a, h); err == nil {
				record.Of(ctx).SetPrincipal(p.Name)
				return recheck(access.NewContext(ctx, p), opts, h), nil, nil
			}
		} else if authenticated(ctx) {
			return ctx, nil, nil
		} else {
			err = auth.NoCredential
		}
		code, msg := fault.CodeOf(err), fault.MessageOf(err)
		record.Of(ctx).Refuse(record.ReasonOf(code), code, msg)
		ctx = transport.WithWebsocketCloseCode(ctx, CloseUnauthenticated)
		ctx = transport.AppendCloseReason(ctx, "unauthenticated")
		return ctx, nil, fault.Errorf(code, "%s", msg)
	}
}

// recheck returns ctx, cancelled once the credential authorization no
// longer authenticates, checked every opts.RecheckInterval: a stream opened
// with a token ends when the token expires or is withdrawn, rather than
// outliving it.
func recheck(ctx context.Context, opts Options, authorization string) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		tick := time.NewTicker(opts.RecheckInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := Authenticate(ctx, opts.Authenticator, authorization); err != nil {
					if ctx.Err() == nil {
						opts.Logger.LogAttrs(ctx, slog.LevelInfo, "stream ended: its credential no longer authenticates",
							slog.String("principal", access.FromContext(ctx).Name), slog.String("why", fault.MessageOf(err)))
					}
					cancel(err)
					return
				}
			}
		}
	}()
	return ctx
}

// authenticated reports whether ctx carries a principal of its own.
func authenticated(ctx context.Context) bool {
	return access.FromContext(ctx) != access.Everyone
}

// principalOf is the attribute naming the request's principal on its log
// lines, when authentication is on and the request has one.
func principalOf(ctx context.Context, opts Options) (slog.Attr, bool) {
	if opts.Authenticator == nil || !authenticated(ctx) {
		return slog.Attr{}, false
	}
	return slog.String("principal", access.FromContext(ctx).Name), true
}
