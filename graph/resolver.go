package graph

//go:generate go tool gqlgen generate

import (
	"github.com/flowsnap/flowsnap/snapshot"
)

// Resolver is the root of the GraphQL resolvers: what every resolver may
// use. Each operation reads in one snapshot transaction that the handler
// opens (see NewHandler); resolvers read through Reader with the context they
// are given, which carries that transaction.
type Resolver struct {
	Reader *snapshot.Reader
}
