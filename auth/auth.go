// Package auth is how a request proves who it is
// (docs/contract.md#authentication): a bearer token is looked up in a tokens
// file (Tokens) or verified as a JWT against an OIDC provider's keys (JWT),
// and either gives an access.Principal.
//
// The package knows nothing of HTTP requests: the endpoint takes the token
// from a request's Authorization header or a WebSocket's connection_init
// payload (Bearer) and hands it to an Authenticator. Only the JWT
// verifier speaks HTTP, as a client, to fetch the provider's keys, through
// its library.
package auth

import (
	"context"
	"strings"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/fault"
)

// The modes of --auth (docs/contract.md#authentication).
const (
	ModeNone   = "none"
	ModeTokens = "tokens"
	ModeJWT    = "jwt"
)

// Modes are the values --auth takes.
var Modes = []string{ModeNone, ModeTokens, ModeJWT}

// Authenticator turns a bearer token into the principal it stands for.
// Every error it returns has code UNAUTHENTICATED and a message safe to show
// the client; it never repeats the token.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*access.Principal, error)
}

// Bearer returns the token of an Authorization value of the Bearer scheme
// (RFC 6750: the scheme's name in any case, one space, the token). ok is
// false for a value of another scheme or without a token.
func Bearer(authorization string) (token string, ok bool) {
	const scheme = "bearer "
	if len(authorization) <= len(scheme) || !strings.EqualFold(authorization[:len(scheme)], scheme) {
		return "", false
	}
	token = strings.TrimSpace(authorization[len(scheme):])
	return token, token != ""
}

// Refuse is the error for a request without a usable credential: why, in
// words safe to show the client.
func Refuse(why string) error {
	return fault.Errorf(fault.Unauthenticated, "%s", why)
}

// NoCredential is the refusal of a request that carries no credential.
var NoCredential = Refuse("a bearer token is required: send Authorization: Bearer <token>")
