package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/flowsnap/flowsnap/auth"
	"github.com/flowsnap/flowsnap/fault"
)

// issuer is an OIDC provider's signing side: private keys, and a JWKS
// endpoint serving their public halves.
type issuer struct {
	t       *testing.T
	mu      sync.Mutex
	public  jwk.Set
	fetches atomic.Int64
	down    atomic.Bool
	srv     *httptest.Server
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	is := &issuer{t: t, public: jwk.NewSet()}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		if is.down.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		is.mu.Lock()
		b, err := json.Marshal(is.public)
		is.mu.Unlock()
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=3600")
		_, _ = w.Write(b)
	}))
	t.Cleanup(is.srv.Close)
	return is
}

// key makes a private key of kind ("rsa" or "ec"), publishes its public
// half under kid (replacing what was published when replace), and returns
// the private key as a JWK.
func (is *issuer) key(kind, kid string, replace bool) jwk.Key {
	is.t.Helper()
	var raw any
	var alg jwa.SignatureAlgorithm
	switch kind {
	case "rsa":
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			is.t.Fatal(err)
		}
		raw, alg = k, jwa.RS256()
	case "ec":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			is.t.Fatal(err)
		}
		raw, alg = k, jwa.ES256()
	}
	priv, err := jwk.Import(raw)
	if err != nil {
		is.t.Fatal(err)
	}
	_ = priv.Set(jwk.KeyIDKey, kid)
	_ = priv.Set(jwk.AlgorithmKey, alg)
	pub, err := priv.PublicKey()
	if err != nil {
		is.t.Fatal(err)
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	if replace {
		is.public = jwk.NewSet()
	}
	if err := is.public.AddKey(pub); err != nil {
		is.t.Fatal(err)
	}
	return priv
}

// sign returns a JWT with claims, signed by key with its algorithm.
func (is *issuer) sign(key jwk.Key, claims map[string]any) string {
	is.t.Helper()
	b := jwt.NewBuilder()
	for k, v := range claims {
		b = b.Claim(k, v)
	}
	tok, err := b.Build()
	if err != nil {
		is.t.Fatal(err)
	}
	alg, _ := key.Algorithm()
	signed, err := jwt.Sign(tok, jwt.WithKey(alg, key))
	if err != nil {
		is.t.Fatal(err)
	}
	return string(signed)
}

// claims are a valid token's claims, with changes (nil deletes).
func claims(changes map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{
		"iss": "https://id.example.com/", "aud": "flowsnap", "sub": "alice@example.com",
		"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(),
		"flowsnap": map[string]any{"flows": []string{"billing-*"}, "payloads": true},
	}
	for k, v := range changes {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func newVerifier(t *testing.T, is *issuer, log *logBuffer) *auth.JWT {
	t.Helper()
	opts := auth.JWTOptions{JWKSURL: is.srv.URL + "/jwks", Issuer: "https://id.example.com/", Audience: "flowsnap"}
	if log != nil {
		opts.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
	v, err := auth.NewJWT(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if !is.down.Load() && !v.WaitKeys(ctx) {
		t.Fatal("the keys were not fetched")
	}
	return v
}

// unsigned builds a compact JWS from a header and claims, signed by sign.
func unsigned(t *testing.T, header, claims map[string]any, sign func(input []byte) []byte) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	input := enc(header) + "." + enc(claims)
	return input + "." + base64.RawURLEncoding.EncodeToString(sign([]byte(input)))
}

func wantRefused(t *testing.T, v auth.Authenticator, token, why string) {
	t.Helper()
	p, err := v.Authenticate(t.Context(), token)
	if err == nil {
		t.Fatalf("accepted as %+v, want refused (%s)", p, why)
	}
	if fault.CodeOf(err) != fault.Unauthenticated {
		t.Errorf("code %s, want UNAUTHENTICATED", fault.CodeOf(err))
	}
	if !strings.Contains(fault.MessageOf(err), why) {
		t.Errorf("message %q, want it to say %q", fault.MessageOf(err), why)
	}
	if strings.Contains(err.Error(), token) {
		t.Error("the error repeats the token")
	}
}

func TestJWTAcceptsTokensOfTheIssuersKeys(t *testing.T) {
	is := newIssuer(t)
	rsaKey := is.key("rsa", "rsa-1", false)
	ecKey := is.key("ec", "ec-1", false)
	v := newVerifier(t, is, nil)
	for name, key := range map[string]jwk.Key{"RS256": rsaKey, "ES256": ecKey} {
		t.Run("signed with "+name, func(t *testing.T) {
			p, err := v.Authenticate(t.Context(), is.sign(key, claims(nil)))
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != "alice@example.com" || len(p.Flows) != 1 || p.Flows[0] != "billing-*" || !p.Payloads {
				t.Errorf("principal %+v, want alice@example.com with billing-* and payloads", p)
			}
		})
	}
	t.Run("expired within the leeway", func(t *testing.T) {
		if _, err := v.Authenticate(t.Context(), is.sign(rsaKey, claims(map[string]any{"exp": time.Now().Add(-30 * time.Second).Unix()}))); err != nil {
			t.Errorf("refused a token 30 s past exp: %v", err)
		}
	})
	t.Run("without the flowsnap claim it sees no run", func(t *testing.T) {
		p, err := v.Authenticate(t.Context(), is.sign(rsaKey, claims(map[string]any{"flowsnap": nil})))
		if err != nil {
			t.Fatal(err)
		}
		if p.Name != "alice@example.com" || len(p.Flows) != 0 || p.Payloads || !p.Scope().None() {
			t.Errorf("principal %+v, want alice@example.com with no flows and no payloads", p)
		}
	})
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("%d fetches of the JWKS, want 1: keys are cached", n)
	}
}

func TestJWTRefusesTokensItMustNotTrust(t *testing.T) {
	is := newIssuer(t)
	rsaKey := is.key("rsa", "rsa-1", false)
	is.key("ec", "ec-1", false)
	v := newVerifier(t, is, nil)
	now := time.Now()
	rsaPub, err := rsaKey.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	var pubRaw rsa.PublicKey
	if err := jwk.Export(rsaPub, &pubRaw); err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&pubRaw)
	if err != nil {
		t.Fatal(err)
	}
	pubJSON, _ := json.Marshal(rsaPub)
	hs256 := func(secret []byte) func([]byte) []byte {
		return func(in []byte) []byte {
			m := hmac.New(sha256.New, secret)
			m.Write(in)
			return m.Sum(nil)
		}
	}
	good := is.sign(rsaKey, claims(nil))
	forged := good[:strings.LastIndexByte(good, '.')+1] + base64.RawURLEncoding.EncodeToString(make([]byte, 256))
	cases := []struct {
		name, token, why string
	}{
		{"expired", is.sign(rsaKey, claims(map[string]any{"exp": now.Add(-2 * time.Minute).Unix()})), "expired"},
		{"not yet valid", is.sign(rsaKey, claims(map[string]any{"nbf": now.Add(2 * time.Minute).Unix()})), "not valid yet"},
		{"without exp", is.sign(rsaKey, claims(map[string]any{"exp": nil})), "no expiry"},
		{"of another issuer", is.sign(rsaKey, claims(map[string]any{"iss": "https://evil.example.com/"})), "issuer"},
		{"for another audience", is.sign(rsaKey, claims(map[string]any{"aud": "another-service"})), "not meant for this server"},
		{"without a subject", is.sign(rsaKey, claims(map[string]any{"sub": nil})), "no subject"},
		{"with a malformed claim", is.sign(rsaKey, claims(map[string]any{"flowsnap": "everything"})), "must be an object"},
		{"with alg none", unsigned(t, map[string]any{"alg": "none", "kid": "rsa-1", "typ": "JWT"}, claims(nil),
			func([]byte) []byte { return nil }), "algorithm is not accepted"},
		{"HS256 with the public key's DER as the secret", unsigned(t, map[string]any{"alg": "HS256", "kid": "rsa-1", "typ": "JWT"}, claims(nil),
			hs256(der)), "algorithm is not accepted"},
		{"HS256 with the public JWK as the secret", unsigned(t, map[string]any{"alg": "HS256", "kid": "rsa-1", "typ": "JWT"}, claims(nil),
			hs256(pubJSON)), "algorithm is not accepted"},
		{"RS256 naming the EC key", unsigned(t, map[string]any{"alg": "RS256", "kid": "ec-1", "typ": "JWT"}, claims(nil),
			func([]byte) []byte { return []byte("not a signature") }), "does not verify"},
		{"with a forged signature", forged, "does not verify"},
		{"that is no JWT", "not-a-jwt", "not a signed JWT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantRefused(t, v, c.token, c.why) })
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("%d fetches of the JWKS, want 1: none of these names an unknown key", n)
	}
}

func TestJWTFetchesKeysAgainForAnUnknownKeyAtMostOncePerInterval(t *testing.T) {
	is := newIssuer(t)
	is.key("rsa", "rsa-1", false)
	var log logBuffer
	v := newVerifier(t, is, &log)
	stranger := is.key("rsa", "stranger", false)
	// Withdrawn at once: the issuer never published it when asked again.
	is.mu.Lock()
	is.public = jwk.NewSet()
	is.mu.Unlock()
	is.key("rsa", "rsa-1b", false)
	before := is.fetches.Load()
	wantRefused(t, v, is.sign(stranger, claims(nil)), "key the issuer does not publish")
	if n := is.fetches.Load() - before; n != 1 {
		t.Fatalf("%d fetches for an unknown key, want 1", n)
	}
	for range 5 {
		wantRefused(t, v, is.sign(stranger, claims(nil)), "key the issuer does not publish")
	}
	if n := is.fetches.Load() - before; n != 1 {
		t.Errorf("%d fetches after six tokens with an unknown key, want 1: at most one per interval", n)
	}
}

func TestJWTTakesUpARotatedKey(t *testing.T) {
	is := newIssuer(t)
	old := is.key("rsa", "2026-01", false)
	v := newVerifier(t, is, nil)
	if _, err := v.Authenticate(t.Context(), is.sign(old, claims(nil))); err != nil {
		t.Fatal(err)
	}
	// The provider rotates: the old key is withdrawn, a new one signs.
	rotated := is.key("ec", "2026-02", true)
	p, err := v.Authenticate(t.Context(), is.sign(rotated, claims(nil)))
	if err != nil {
		t.Fatalf("a token of the rotated key: %v", err)
	}
	if p.Name != "alice@example.com" {
		t.Errorf("principal %q", p.Name)
	}
	if n := is.fetches.Load(); n != 2 {
		t.Errorf("%d fetches, want 2 (the first, and one for the new key)", n)
	}
}

func TestJWTSaysWhenTheKeysCannotBeFetched(t *testing.T) {
	is := newIssuer(t)
	key := is.key("rsa", "rsa-1", false)
	is.down.Store(true)
	var log logBuffer
	v := newVerifier(t, is, &log)
	wantRefused(t, v, is.sign(key, claims(nil)), "key the issuer does not publish")
	wantRefused(t, v, is.sign(key, claims(nil)), "key the issuer does not publish")
	if st := v.Status(); !strings.Contains(st, "jwks: the last fetch of "+is.srv.URL) {
		t.Errorf("status %q, want it to name the failed fetch", st)
	}
	if n := strings.Count(log.String(), "fetching the JWKS failed"); n != 1 {
		t.Errorf("%d log lines about failed fetches, want 1 (rate-limited):\n%s", n, log.String())
	}
	// A fetch that works clears it.
	is.down.Store(false)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := v.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if st := v.Status(); st != "" {
		t.Errorf("status %q after a good fetch, want none", st)
	}
}

func TestJWTOptionsAreChecked(t *testing.T) {
	for name, opts := range map[string]auth.JWTOptions{
		"without an issuer":   {JWKSURL: "https://id.example.com/jwks", Audience: "a"},
		"without an audience": {JWKSURL: "https://id.example.com/jwks", Issuer: "i"},
		"without a JWKS URL":  {Issuer: "i", Audience: "a"},
		"with a file URL":     {JWKSURL: "file:///etc/passwd", Issuer: "i", Audience: "a"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := auth.NewJWT(t.Context(), opts); err == nil {
				t.Error("accepted")
			}
		})
	}
}
