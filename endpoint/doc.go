// Package endpoint is flowsnap's HTTP edge of /graphql: what happens to a
// request before and after the schema resolves it.
//
// It admits the request (endpoint.go: methods, media types, origins, body
// and variables limits, request.go: the body's shape), bounds the document
// before and after it is parsed (guard.go: size, tokens, parsing slots;
// limits.go: depth, aliases, cost), finds the least revision the operation
// must read at (minrevision.go), begins the operation's one read and its
// loaders (handler.go), answers a query whose document is cached without
// gqlgen's transport (cached.go), tags and revalidates GET answers
// (etag.go), answers request errors as GraphQL over HTTP asks
// (overhttp.go), serves subscriptions over WebSocket and server-sent
// events (subscription.go), and counts and logs every operation and
// refusal once (metrics.go, loglimit.go, and the request's record in
// endpoint/record).
//
// The schema and its resolvers are package graph; how an operation's data
// is read and the direct answer are package plan.
package endpoint
