package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/lestrrat-go/httprc/v3"
	"github.com/lestrrat-go/httprc/v3/errsink"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/flowsnap/flowsnap/access"
)

// JWTOptions configure a JWT verifier (docs/contract.md#authentication).
type JWTOptions struct {
	// JWKSURL is where the provider publishes its keys (an OIDC provider's
	// jwks_uri); Issuer and Audience are what iss and aud must say.
	JWKSURL, Issuer, Audience string
	// Claim names the claim holding {"flows": [...], "payloads": bool};
	// "" is "flowsnap".
	Claim string
	// Leeway is how far exp and nbf may be off; 0 is a minute.
	Leeway time.Duration
	// RefetchInterval is the least time between two fetches of the keys
	// made because a token named a key the set does not hold; 0 is a
	// minute. Keys are otherwise refetched as the JWKS response's
	// Cache-Control or Expires say, between MinRefresh and MaxRefresh.
	RefetchInterval time.Duration
	// MinRefresh and MaxRefresh bound how long fetched keys are kept; 0s
	// are five minutes and a day.
	MinRefresh, MaxRefresh time.Duration
	// Logger receives failed fetches, at most one line per RefetchInterval;
	// nil discards.
	Logger *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// DefaultClaim is the claim a principal's flows and payloads permission
// are read from when --jwt-claim is not given.
const DefaultClaim = "flowsnap"

// algorithms are the signature algorithms a token may be signed with: the
// asymmetric ones. "none" and HMAC (HS256, …) are refused before any key is
// looked at, so a token "signed" with a public key as an HMAC secret never
// reaches a verifier.
var algorithms = []jwa.SignatureAlgorithm{
	jwa.RS256(), jwa.RS384(), jwa.RS512(), jwa.PS256(), jwa.ES256(), jwa.ES384(), jwa.EdDSA(),
}

// JWT authenticates bearer tokens that are JWTs signed by one of the keys
// of a JWKS. Keys are fetched by the library's cache (jwk.Cache), which
// refreshes them in the background as their HTTP cache headers say; a
// token signed by a key the set does not hold makes it fetch them again,
// at most once per RefetchInterval, so rotated keys are taken up at once
// and a stream of tokens with made-up key ids costs one fetch a minute.
type JWT struct {
	opts  JWTOptions
	cache *jwk.Cache
	stop  context.CancelFunc

	mu sync.Mutex
	// lastRefetch is when an unknown key id last made the keys be fetched.
	lastRefetch time.Time
	// lastErr and lastErrAt are the last failed fetch, cleared by a good
	// one; logged is when a failure was last logged.
	lastErr           error
	lastErrAt, logged time.Time
}

var _ Authenticator = (*JWT)(nil)

// NewJWT checks opts and starts fetching the keys; it does not wait for
// them, so a provider that is down does not keep the server from starting
// (Status says so, and tokens are refused until the keys arrive). Close
// stops the background fetches.
func NewJWT(ctx context.Context, opts JWTOptions) (*JWT, error) {
	if opts.JWKSURL == "" || opts.Issuer == "" || opts.Audience == "" {
		return nil, errors.New("--auth jwt needs --jwt-jwks-url, --jwt-issuer and --jwt-audience")
	}
	if u, err := url.Parse(opts.JWKSURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("--jwt-jwks-url %q: want an http or https URL", opts.JWKSURL)
	}
	if opts.Claim == "" {
		opts.Claim = DefaultClaim
	}
	if opts.Leeway <= 0 {
		opts.Leeway = time.Minute
	}
	if opts.RefetchInterval <= 0 {
		opts.RefetchInterval = time.Minute
	}
	if opts.MinRefresh <= 0 {
		opts.MinRefresh = 5 * time.Minute
	}
	if opts.MaxRefresh <= 0 {
		opts.MaxRefresh = 24 * time.Hour
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	j := &JWT{opts: opts}
	ctx, j.stop = context.WithCancel(context.WithoutCancel(ctx))
	cache, err := jwk.NewCache(ctx, httprc.NewClient(httprc.WithErrorSink(errsink.NewFunc(func(_ context.Context, err error) {
		j.failed(err)
	}))))
	if err != nil {
		j.stop()
		return nil, fmt.Errorf("starting the JWKS cache: %w", err)
	}
	j.cache = cache
	if err := cache.Register(ctx, opts.JWKSURL, jwk.WithWaitReady(false), jwk.WithHTTPClient(j.client()),
		jwk.WithMinInterval(opts.MinRefresh), jwk.WithMaxInterval(opts.MaxRefresh)); err != nil {
		j.stop()
		return nil, fmt.Errorf("--jwt-jwks-url %q: %w", opts.JWKSURL, err)
	}
	return j, nil
}

// client is the HTTP client the keys are fetched with: a bounded time,
// no redirect from HTTPS to HTTP and at most five, as the library's own;
// a response it gets clears the last failure (failed records the next).
func (j *JWT) client() *http.Client {
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: fetched{next: http.DefaultTransport, ok: j.fetched},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("more than 5 redirects")
			}
			if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
				return errors.New("a redirect from https to http")
			}
			return nil
		},
	}
}

// fetched calls ok for every 200 response.
type fetched struct {
	next http.RoundTripper
	ok   func()
}

func (f fetched) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := f.next.RoundTrip(req)
	if err == nil && res.StatusCode == http.StatusOK {
		f.ok()
	}
	return res, err
}

// fetched clears the last failure: the keys were fetched.
func (j *JWT) fetched() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lastErr = nil
}

// Refresh fetches the keys now, whatever the interval; what it returns is
// also what Status says.
func (j *JWT) Refresh(ctx context.Context) (jwk.Set, error) {
	set, err := j.cache.Refresh(ctx, j.opts.JWKSURL)
	if err != nil {
		j.failed(err)
	}
	return set, err
}

// Close stops fetching keys.
func (j *JWT) Close() {
	j.stop()
}

// WaitKeys waits until the keys have been fetched once, or ctx ends; it
// reports whether they were.
func (j *JWT) WaitKeys(ctx context.Context) bool {
	return j.cache.Ready(ctx, j.opts.JWKSURL)
}

// Status is "" while the keys are fetched as they should be, and otherwise
// says when and why the last fetch failed (for /readyz).
func (j *JWT) Status() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.lastErr == nil {
		return ""
	}
	return fmt.Sprintf("jwks: the last fetch of %s failed %s ago: %v", j.opts.JWKSURL,
		j.opts.Now().Sub(j.lastErrAt).Round(time.Second), j.lastErr)
}

// failed records a failed fetch and logs it, at most once per
// RefetchInterval.
func (j *JWT) failed(err error) {
	j.mu.Lock()
	now := j.opts.Now()
	j.lastErr, j.lastErrAt = err, now
	log := now.Sub(j.logged) >= j.opts.RefetchInterval
	if log {
		j.logged = now
	}
	j.mu.Unlock()
	if log {
		j.opts.Logger.Warn("fetching the JWKS failed: tokens signed by keys not yet fetched are refused",
			slog.String("url", j.opts.JWKSURL), slog.String("error", err.Error()))
	}
}

// keys returns the key set, fetching it again when it lacks kid (or is not
// fetched yet) and no such fetch happened in the last RefetchInterval.
func (j *JWT) keys(ctx context.Context, kid string) (jwk.Set, bool) {
	set, err := j.cache.Lookup(ctx, j.opts.JWKSURL)
	if err == nil {
		if _, ok := set.LookupKeyID(kid); ok {
			return set, true
		}
	}
	j.mu.Lock()
	now := j.opts.Now()
	may := j.lastRefetch.IsZero() || now.Sub(j.lastRefetch) >= j.opts.RefetchInterval
	if may {
		j.lastRefetch = now
	}
	j.mu.Unlock()
	if !may {
		return set, false
	}
	fresh, err := j.Refresh(ctx)
	if err != nil {
		return set, false
	}
	_, ok := fresh.LookupKeyID(kid)
	return fresh, ok
}

// claim is the access claim of a token.
type claim struct {
	Flows    []string `json:"flows"`
	Payloads bool     `json:"payloads"`
}

// Authenticate verifies token and returns its principal: named by sub,
// with the flows and payloads permission of the access claim; a token
// without the claim is a principal that sees no run.
func (j *JWT) Authenticate(ctx context.Context, token string) (*access.Principal, error) {
	msg, err := jws.ParseString(token)
	if err != nil || len(msg.Signatures()) != 1 {
		return nil, Refuse("the bearer token is not a signed JWT")
	}
	hdr := msg.Signatures()[0].ProtectedHeaders()
	alg, ok := hdr.Algorithm()
	if !ok || !slices.Contains(algorithms, alg) {
		return nil, Refuse("the token's signature algorithm is not accepted: want RS256, RS384, RS512, PS256, ES256, ES384 or EdDSA")
	}
	kid, _ := hdr.KeyID()
	if kid == "" {
		return nil, Refuse("the token names no key (kid)")
	}
	set, ok := j.keys(ctx, kid)
	if !ok {
		return nil, Refuse("the token is signed by a key the issuer does not publish")
	}
	// The key must be of a type for the token's algorithm, and declare it
	// when it declares one: the library checks both.
	tok, err := jwt.ParseString(token,
		jwt.WithKeySet(set, jws.WithInferAlgorithmFromKey(true), jws.WithRequireKid(true)),
		jwt.WithValidate(true),
		jwt.WithIssuer(j.opts.Issuer), jwt.WithAudience(j.opts.Audience),
		jwt.WithRequiredClaim("exp"), jwt.WithAcceptableSkew(j.opts.Leeway),
		jwt.WithClock(jwt.ClockFunc(j.opts.Now)))
	if err != nil {
		return nil, Refuse(jwtRefusal(err))
	}
	sub, _ := tok.Subject()
	if sub == "" {
		return nil, Refuse("the token has no subject (sub)")
	}
	p := &access.Principal{Name: sub}
	var raw json.RawMessage
	if tok.Has(j.opts.Claim) {
		var v any
		if err := tok.Get(j.opts.Claim, &v); err != nil {
			return nil, Refuse(fmt.Sprintf("the token's %q claim cannot be read", j.opts.Claim))
		}
		raw, _ = json.Marshal(v)
		var c claim
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, Refuse(fmt.Sprintf("the token's %q claim must be an object {\"flows\": [...], \"payloads\": bool}", j.opts.Claim))
		}
		if err := CheckFlows(c.Flows); err != nil {
			return nil, Refuse(fmt.Sprintf("the token's %q claim: %v", j.opts.Claim, err))
		}
		p.Flows, p.Payloads = c.Flows, c.Payloads
	}
	return p, nil
}

// jwtRefusal says why the library refused a token, in words safe to show.
func jwtRefusal(err error) string {
	for _, r := range jwtRefusals {
		if errors.Is(err, r.err) {
			return r.why
		}
	}
	return "the token's signature does not verify"
}

// jwtRefusals are the library's validation errors and what each means,
// the more specific first: ValidateError is every one's.
var jwtRefusals = []struct {
	err error
	why string
}{
	{jwt.TokenExpiredError(), "the token has expired"},
	{jwt.TokenNotYetValidError(), "the token is not valid yet (nbf)"},
	{jwt.InvalidIssuerError(), "the token's issuer (iss) is not the one this server accepts"},
	{jwt.InvalidAudienceError(), "the token is not meant for this server (aud)"},
	{jwt.MissingRequiredClaimError(), "the token has no expiry (exp)"},
	{jwt.ValidateError(), "the token's claims are not valid"},
}
