package main

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// jwksIssuer is an identity provider: an RSA key and a JWKS endpoint that
// can be made to fail.
type jwksIssuer struct {
	key  jwk.Key
	srv  *httptest.Server
	down atomic.Bool
}

func newJWKSIssuer(t *testing.T) *jwksIssuer {
	t.Helper()
	raw, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	key, err := jwk.Import(raw)
	if err != nil {
		t.Fatal(err)
	}
	_ = key.Set(jwk.KeyIDKey, "k1")
	_ = key.Set(jwk.AlgorithmKey, jwa.RS256())
	pub, _ := key.PublicKey()
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	body, _ := json.Marshal(set)
	is := &jwksIssuer{key: key}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if is.down.Load() {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(is.srv.Close)
	return is
}

func (is *jwksIssuer) token(t *testing.T, sub string) string {
	t.Helper()
	tok, err := jwt.NewBuilder().Issuer("https://id.example.com/").Audience([]string{"flowsnap"}).Subject(sub).
		Expiration(time.Now().Add(time.Hour)).Claim("flowsnap", map[string]any{"flows": []string{"*"}, "payloads": true}).Build()
	if err != nil {
		t.Fatal(err)
	}
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.RS256(), is.key))
	if err != nil {
		t.Fatal(err)
	}
	return string(signed)
}

func (is *jwksIssuer) flags() []string {
	return []string{"--auth", "jwt", "--jwt-jwks-url", is.srv.URL + "/jwks", "--jwt-issuer", "https://id.example.com/", "--jwt-audience", "flowsnap"}
}

func TestJWTModeAuthenticatesByTheProvidersKeys(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	is := newJWKSIssuer(t)
	addr, out, _ := startServeOutput(t, noEnv, append([]string{"--db", dsn, "--log-format", "json"}, is.flags()...)...)
	base := "http://" + addr + "/graphql"
	token := is.token(t, "alice@example.com")
	if status, _, code := authPost(t, base, "Bearer "+token, "{ position { revision } }"); status != http.StatusOK || code != "" {
		t.Fatalf("a valid token: %d %q", status, code)
	}
	if status, _, code := authPost(t, base, "Bearer "+token[:len(token)-4]+"AAAA", "{ position { revision } }"); status != http.StatusUnauthorized || code != "UNAUTHENTICATED" {
		t.Errorf("a forged token: %d %q", status, code)
	}
	log := out.String()
	if !strings.Contains(log, `"principal":"alice@example.com"`) || strings.Contains(log, token) {
		t.Errorf("the log does not name the subject, or holds the token:\n%s", log)
	}
}

func TestJWTModeShowsFailedKeyFetchesInReadyz(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	is := newJWKSIssuer(t)
	is.down.Store(true)
	addr, _, _ := startServeOutput(t, noEnv, append([]string{"--db", dsn}, is.flags()...)...)
	// The token names a key not fetched yet: it fetches, and fails.
	if status, _, _ := authPost(t, "http://"+addr+"/graphql", "Bearer "+is.token(t, "bob"), "{ position { revision } }"); status != http.StatusUnauthorized {
		t.Errorf("a token with no keys to check it: %d", status)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, body := httpGet(t, "http://"+addr+"/readyz")
		if status == http.StatusOK && strings.Contains(body, "jwks: the last fetch of "+is.srv.URL+"/jwks failed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q", status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSIGHUPNeverEndsTheServer: `systemctl reload` sends SIGHUP whatever
// the mode; with none and with jwt it is logged (jwt fetches the keys
// again), and the server keeps serving.
func TestSIGHUPNeverEndsTheServer(t *testing.T) {
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	is := newJWKSIssuer(t)
	plain, plainOut, _ := startServeOutput(t, noEnv, "--db", dsn)
	jwtAddr, jwtOut, _ := startServeOutput(t, noEnv, append([]string{"--db", dsn}, is.flags()...)...)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(plainOut.String(), "SIGHUP: nothing to reload") || !strings.Contains(jwtOut.String(), "SIGHUP: fetching the JWKS again") {
		if time.Now().After(deadline) {
			t.Fatalf("SIGHUP not logged:\n%s\n%s", plainOut.String(), jwtOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, addr := range []string{plain, jwtAddr} {
		if status, _ := httpGet(t, "http://"+addr+"/healthz"); status != http.StatusOK {
			t.Errorf("%s after SIGHUP: %d", addr, status)
		}
	}
}
