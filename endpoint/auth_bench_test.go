package endpoint_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/flowsnap/flowsnap/auth"
	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// BenchmarkAuthenticatedQuery serves one small query whose document the
// server has cached (a run by id: answered by the endpoint itself, from
// the run cache) through the handler in process, without authentication
// and with a bearer token checked against a tokens file and as a JWT
// (RS256 and ES256 keys of a JWKS): the difference is what authentication
// costs a request.
func BenchmarkAuthenticatedQuery(b *testing.B) {
	dsn := storetest.DSN(b, store.SQLite)
	db := storetest.OpenDSN(b, dsn, true)
	ctx := context.Background()
	if _, err := engine.Seed(ctx, db, engine.SeedOptions{Runs: 200, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	var id string
	if err := db.Write(ctx, func(tx store.Tx) error {
		return tx.QueryRow(ctx, `SELECT run_id FROM flows_runs ORDER BY run_id LIMIT 1`).Scan(&id)
	}); err != nil {
		b.Fatal(err)
	}
	reader := snapshot.NewReader(storetest.OpenReader(b, dsn))
	reader.SetRunCache(snapshot.DefaultRunCacheBytes)
	body := `{"query":"query One($id: ID!) { run(id: $id) { ... on Run { id status flowName } } }","variables":{"id":` + jsonString(id) + `}}`

	// A tokens file of a hundred tokens.
	const secret = "bench-token-0042"
	var entries []string
	for i := range 100 {
		tok := secret
		if i != 42 {
			tok = "other-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		}
		sum := sha256.Sum256([]byte(tok))
		entries = append(entries, `{"name":"t`+string(rune('a'+i%26))+string(rune('a'+i/26))+`","sha256":"`+hex.EncodeToString(sum[:])+`","flows":["*"],"payloads":true}`)
	}
	path := filepath.Join(b.TempDir(), "tokens.json")
	if err := os.WriteFile(path, []byte("["+strings.Join(entries, ",")+"]"), 0o600); err != nil {
		b.Fatal(err)
	}
	tokens, err := auth.OpenTokens(path, nil)
	if err != nil {
		b.Fatal(err)
	}

	// A JWKS with an RSA and an EC key.
	rsaRaw, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecRaw, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	set := jwk.NewSet()
	keys := map[string]jwk.Key{}
	for kid, raw := range map[string]any{"rsa": rsaRaw, "ec": ecRaw} {
		k, err := jwk.Import(raw)
		if err != nil {
			b.Fatal(err)
		}
		_ = k.Set(jwk.KeyIDKey, kid)
		alg := jwa.RS256()
		if kid == "ec" {
			alg = jwa.ES256()
		}
		_ = k.Set(jwk.AlgorithmKey, alg)
		pub, _ := k.PublicKey()
		_ = set.AddKey(pub)
		keys[kid] = k
	}
	jwks, _ := json.Marshal(set)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwks)
	}))
	defer srv.Close()
	verifier, err := auth.NewJWT(ctx, auth.JWTOptions{JWKSURL: srv.URL, Issuer: "https://id.example.com/", Audience: "flowsnap"})
	if err != nil {
		b.Fatal(err)
	}
	defer verifier.Close()
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if !verifier.WaitKeys(wait) {
		b.Fatal("no keys")
	}
	sign := func(kid string) string {
		tok, _ := jwt.NewBuilder().Issuer("https://id.example.com/").Audience([]string{"flowsnap"}).Subject("bench").
			Expiration(time.Now().Add(time.Hour)).Claim("flowsnap", map[string]any{"flows": []string{"*"}, "payloads": true}).Build()
		alg, _ := keys[kid].Algorithm()
		signed, err := jwt.Sign(tok, jwt.WithKey(alg, keys[kid]))
		if err != nil {
			b.Fatal(err)
		}
		return string(signed)
	}

	for _, c := range []struct {
		name   string
		authn  auth.Authenticator
		bearer string
	}{
		{"none", nil, ""},
		{"tokens", tokens, secret},
		{"jwtRS256", verifier, sign("rsa")},
		{"jwtES256", verifier, sign("ec")},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := endpoint.NewHandler(reader, endpoint.Options{Authenticator: c.authn})
			do := func() {
				req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if c.bearer != "" {
					req.Header.Set("Authorization", "Bearer "+c.bearer)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `"errors"`) {
					b.Fatalf("%d %s", rec.Code, rec.Body.String())
				}
			}
			do() // the document is cached from here on
			b.ReportAllocs()
			for b.Loop() {
				do()
			}
		})
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
