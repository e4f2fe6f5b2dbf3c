package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/flowsnap/flowsnap/auth"
	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/opscli"
)

// authOptions are the flags of authentication
// (docs/contract.md#authentication).
type authOptions struct {
	mode                 string
	allowUnauthenticated bool
	tokensFile           string
	jwt                  auth.JWTOptions
	// tokensPoll is how often the tokens file is looked at for changes.
	tokensPoll time.Duration
}

// authFlags are the flags of authentication and TLS, bound to o.
func (b binder) authFlags(o *serveOptions) []cli.Flag {
	return []cli.Flag{
		bind(b, &cli.StringFlag{Name: "auth", Value: auth.ModeNone, Usage: "how requests authenticate: none, tokens (--tokens-file) or jwt (--jwt-*); none on an address that is not loopback needs --allow-unauthenticated",
			Validator: func(v string) error {
				if !slices.Contains(auth.Modes, v) {
					return fmt.Errorf("--auth %q: want %s", v, strings.Join(auth.Modes, ", "))
				}
				return nil
			}}, &o.auth.mode),
		bind(b, &cli.BoolFlag{Name: "allow-unauthenticated", Usage: "serve with --auth none on an address that is not loopback (behind a proxy that authenticates)"}, &o.auth.allowUnauthenticated),
		bind(b, &cli.StringFlag{Name: "tokens-file", Usage: "with --auth tokens: a JSON array of {\"name\", \"sha256\", \"flows\", \"payloads\"}, reloaded on SIGHUP and when it changes"}, &o.auth.tokensFile),
		bind(b, &cli.StringFlag{Name: "jwt-jwks-url", Usage: "with --auth jwt: where the identity provider publishes its signing keys (its jwks_uri)"}, &o.auth.jwt.JWKSURL),
		bind(b, &cli.StringFlag{Name: "jwt-issuer", Usage: "with --auth jwt: what a token's iss must be"}, &o.auth.jwt.Issuer),
		bind(b, &cli.StringFlag{Name: "jwt-audience", Usage: "with --auth jwt: what a token's aud must hold"}, &o.auth.jwt.Audience),
		bind(b, &cli.StringFlag{Name: "jwt-claim", Value: auth.DefaultClaim, Usage: "with --auth jwt: the claim holding {\"flows\": [...], \"payloads\": bool}"}, &o.auth.jwt.Claim),
		bind(b, &cli.StringFlag{Name: "tls-cert", Usage: "a PEM certificate (chain) to serve HTTPS and HTTP/2 with, read again when it changes; needs --tls-key"}, &o.tlsCert),
		bind(b, &cli.StringFlag{Name: "tls-key", Usage: "the PEM private key of --tls-cert"}, &o.tlsKey),
		bind(b, &cli.StringFlag{Name: "metrics-addr", Usage: "where to serve /metrics without a credential (HOST:PORT), apart from --addr; off when empty"}, &o.metricsAddr),
	}
}

// checkExposure refuses, as a usage error, a configuration that would
// serve every run to whoever reaches the port, and flags that belong to
// another mode than the one chosen.
func (o serveOptions) checkExposure() error {
	a := o.auth
	usage := func(format string, args ...any) error { return opscli.Usage(fmt.Errorf(format, args...)) }
	if a.mode != auth.ModeTokens && a.tokensFile != "" {
		return usage("--tokens-file needs --auth tokens")
	}
	if a.mode != auth.ModeJWT && (a.jwt.JWKSURL != "" || a.jwt.Issuer != "" || a.jwt.Audience != "") {
		return usage("--jwt-jwks-url, --jwt-issuer and --jwt-audience need --auth jwt")
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return usage("--tls-cert and --tls-key go together")
	}
	switch a.mode {
	case auth.ModeTokens:
		if a.tokensFile == "" {
			return usage("--auth tokens needs --tokens-file")
		}
	case auth.ModeJWT:
		if a.jwt.JWKSURL == "" || a.jwt.Issuer == "" || a.jwt.Audience == "" {
			return usage("--auth jwt needs --jwt-jwks-url, --jwt-issuer and --jwt-audience")
		}
	default:
		if !loopback(o.addr) && !a.allowUnauthenticated {
			return usage("refusing to serve %s without authentication: anyone who reaches it would read every run. "+
				"Choose --auth tokens or --auth jwt, listen on loopback, or pass --allow-unauthenticated "+
				"when a proxy in front authenticates", o.addr)
		}
	}
	return nil
}

// loopback reports whether a listen address reaches this machine only:
// a loopback IP or "localhost". Any other name, and an empty or
// unspecified host (every interface), is not.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authSetup is the authentication a server runs with: nil authenticator when
// off.
type authSetup struct {
	authenticator auth.Authenticator
	// status says what is wrong with fetching the JWT keys, for /readyz.
	status func() string
	stop   func()
}

// startAuth builds the authenticator of o.auth and keeps it current: a
// tokens file reloaded on SIGHUP and when it changes, JWT keys fetched in
// the background and again on SIGHUP. SIGHUP is taken in every mode (with
// none it is logged), so that `systemctl reload` never ends the server.
// stop ends all that.
func startAuth(ctx context.Context, o serveOptions, log *slog.Logger) (authSetup, error) {
	setup := authSetup{status: func() string { return "" }, stop: func() {}}
	reload := func() { log.Info("SIGHUP: nothing to reload without --auth tokens or jwt") }
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	closeJWT := func() {}
	switch o.auth.mode {
	case auth.ModeTokens:
		tokens, err := auth.OpenTokens(o.auth.tokensFile, log)
		if err != nil {
			cancel()
			return setup, err
		}
		poll := o.auth.tokensPoll
		if poll <= 0 {
			poll = 2 * time.Second
		}
		wg.Go(func() { tokens.Watch(ctx, poll) })
		reload = func() {
			log.Info("SIGHUP: reloading the tokens file")
			_ = tokens.Reload()
		}
		setup.authenticator = tokens
		log.Info("authentication: tokens", slog.String("file", o.auth.tokensFile), slog.Int("tokens", tokens.Len()))
	case auth.ModeJWT:
		opts := o.auth.jwt
		opts.Logger = log
		j, err := auth.NewJWT(ctx, opts)
		if err != nil {
			cancel()
			return setup, opscli.Usage(err)
		}
		reload = func() {
			log.Info("SIGHUP: fetching the JWKS again")
			_, _ = j.Refresh(ctx)
		}
		setup.authenticator, setup.status = j, j.Status
		log.Info("authentication: jwt", slog.String("jwks", opts.JWKSURL), slog.String("issuer", opts.Issuer), slog.String("audience", opts.Audience))
		closeJWT = j.Close
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reload()
			}
		}
	})
	setup.stop = func() {
		signal.Stop(hup)
		cancel()
		wg.Wait()
		closeJWT()
	}
	return setup, nil
}

// requireCredential serves next only to requests with a valid bearer
// token (/metrics with authentication on); others are answered 401 and
// counted as refusals.
func requireCredential(a auth.Authenticator, metrics *endpoint.Metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := auth.NoCredential
		if h := r.Header.Get("Authorization"); h != "" {
			_, err = endpoint.Authenticate(r.Context(), a, h)
		}
		if err != nil {
			metrics.Refused("unauthenticated")
			w.Header().Set("WWW-Authenticate", endpoint.Challenge(r))
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, string(fault.Unauthenticated)+": "+fault.MessageOf(err)+"\n")
			return
		}
		next.ServeHTTP(w, r)
	})
}
