// Package graph is flowsnap's GraphQL schema: the schema files
// (*.graphqls), gqlgen's generated executor, the resolvers, the cost of the
// fields that read many values (complexity.go), and the one place errors
// become what a client sees (errors.go). The API's spelling of scalars and
// enums is graph/scalar. Resolvers read through package plan's loaders;
// the HTTP edge that serves the schema is package endpoint.
package graph

//go:generate go tool gqlgen generate

import (
	"github.com/99designs/gqlgen/graphql"

	"github.com/flowsnap/flowsnap/snapshot"
)

// NewSchema returns the executable schema whose resolvers read through
// reader, with the real cost of the fields that read many values.
func NewSchema(reader *snapshot.Reader) graphql.ExecutableSchema {
	cfg := Config{Resolvers: &Resolver{Reader: reader}}
	setComplexity(&cfg.Complexity, reader)
	return scopedCost{executableSchema: NewExecutableSchema(cfg).(*executableSchema), reader: reader}
}

// Resolver is the root of the GraphQL resolvers: what every resolver may
// use. Each operation reads in one snapshot transaction that the handler
// opens (endpoint.NewHandler); resolvers read through Reader with the context they
// are given, which carries that transaction.
type Resolver struct {
	Reader *snapshot.Reader
}
