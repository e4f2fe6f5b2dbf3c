package endpoint

import (
	"go.opentelemetry.io/otel/trace"
	"log/slog"
	"runtime"
	"time"

	"github.com/flowsnap/flowsnap/auth"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
)

// Options are the limits and switches of the GraphQL endpoint. Zero values
// mean the defaults of DefaultOptions.
type Options struct {
	// Timeout bounds one operation, its read transaction included.
	Timeout time.Duration
	// ComplexityLimit bounds an operation's cost: roughly the number of
	// fields it can return, with connections costing first × their
	// selection and batches len(ids) × theirs.
	ComplexityLimit int
	// MaxDepth bounds how deeply fields nest.
	MaxDepth int
	// MaxAliases bounds how many aliased fields an operation has.
	MaxAliases int
	// MaxTokens bounds how many tokens the parser reads.
	MaxTokens int
	// MaxBodyBytes bounds a request body (and a GET query string).
	MaxBodyBytes int64
	// MaxNodes bounds a document's size as written: its fields, inline
	// fragments, fragment spreads and directives, in total.
	MaxNodes int
	// MaxFields bounds the fields of a document once every fragment spread
	// is expanded.
	MaxFields int
	// MaxSameName bounds how many fields of one response name a selection
	// set may hold (spreads merged in): the overlapping-fields check of
	// validation compares each pair of them.
	MaxSameName int
	// MaxVariablesBytes bounds a request's variables as sent.
	MaxVariablesBytes int
	// MaxParsing bounds how many documents not in the query cache are
	// parsed and validated at once (large bodies read and decoded too).
	MaxParsing int
	// MaxParsingQueue bounds how many requests wait for one of those
	// slots; past it a request is refused at once, 503 TIMEOUT.
	MaxParsingQueue int
	// ParsingDutyPercent is the share of its time a parsing slot may be
	// busy: held for d, it rests d × (100 − p) / p before it is taken
	// again. 100 never rests.
	ParsingDutyPercent int
	// MaxVariableValues bounds how many values (list elements and object
	// members) a request's variables hold.
	MaxVariableValues int
	// MaxErrors bounds the errors one response carries.
	MaxErrors int
	// MaxResponseBytes bounds a response's data.
	MaxResponseBytes int
	// DisableIntrospection turns introspection off.
	DisableIntrospection bool
	// Logger receives one line per operation; nil discards.
	Logger *slog.Logger
	// Metrics, when set, counts operations.
	Metrics *Metrics
	// OnOperation, when set, is called after each operation with the read
	// it used (and after each subscription event); for tests that count
	// statements.
	OnOperation func(rd *snapshot.Read)
	// Live, when set, serves subscriptions; without it they are refused.
	Live *live.Watcher
	// KeepAlive is how often an idle subscription is sent a keep-alive
	// (a WebSocket ping message, an SSE comment).
	KeepAlive time.Duration
	// Tracer, when set, makes each operation and each subscription event
	// a span (trace.go); nil traces nothing.
	Tracer trace.Tracer
	// Authenticator, when set, turns on authentication
	// (docs/contract.md#authentication): every request carries a bearer
	// token, in its Authorization header or, for a WebSocket, in its
	// connection_init payload; without a valid one it is refused with
	// UNAUTHENTICATED (HTTP 401, WebSocket close 4401). The principal is put
	// in the request's context (access.NewContext) for everything below.
	Authenticator auth.Authenticator
	// RecheckInterval is how often the token of an open subscription
	// stream (SSE, WebSocket) is checked again: a stream whose token no
	// longer authenticates (expired, or gone from the tokens file) is
	// ended. 0 is 30 seconds.
	RecheckInterval time.Duration
	// EventTimeout bounds one subscription event, from the read of the
	// change it reports to its response made; 0 takes Timeout. An event
	// over it ends its subscription with TIMEOUT.
	EventTimeout time.Duration
	// MaxConnections bounds the streams open at once: WebSocket
	// connections and server-sent event streams together. Past it a new
	// one is refused, 503 SUBSCRIPTION_LIMIT, before any upgrade.
	MaxConnections int
	// MaxConnectionsPerClient bounds the streams one client holds; a
	// client is its principal when the request carries one, else its
	// remote address (clientOf).
	MaxConnectionsPerClient int
	// MaxSubscriptionsPerClient bounds the subscriptions one client holds
	// at once, over all of its streams.
	MaxSubscriptionsPerClient int
	// StreamWriteTimeout bounds each write to a stream: a client that
	// takes nothing for that long is dropped and its place freed.
	StreamWriteTimeout time.Duration
	// MaxPingsPerSecond bounds the ping messages of a WebSocket
	// connection answered a second (in a burst of as many); past it the
	// connection's next message is read only when the rate allows.
	MaxPingsPerSecond int
	// MaxInitBytes bounds a WebSocket connection's first message, its
	// connection_init; a larger one closes the connection with 4400.
	MaxInitBytes int
	// MaxEvents bounds how many subscription events are read at once;
	// others wait for a turn (and their deadline, EventTimeout, runs from
	// when they have one).
	MaxEvents int
	// events holds a token per event being read (MaxEvents).
	events chan struct{}
	// streams and subscriptions are the places of streams and of
	// subscriptions, shared by every copy of the options (NewHandler).
	streams, subscriptions *places
	// NoDirect leaves every operation to gqlgen's executor, which
	// otherwise answers only the queries the direct answer does not know
	// (direct.go): the same response, at a higher cost.
	NoDirect bool
}

// DefaultOptions are the limits used where Options leaves a zero.
var DefaultOptions = Options{
	Timeout:         10 * time.Second,
	ComplexityLimit: 100_000,
	MaxDepth:        16,
	MaxAliases:      200,
	MaxTokens:       20_000,
	MaxBodyBytes:    1 << 20,
	// A dashboard's largest query has a few hundred fields; these leave
	// it room twenty times over while keeping validation to milliseconds.
	MaxNodes:    5_000,
	MaxFields:   10_000,
	MaxSameName: 100,
	MaxErrors:   100,
	// 200 ids of 1,000 bytes.
	MaxVariablesBytes: 256 << 10,
	MaxParsing:        max(1, runtime.GOMAXPROCS(0)/2),
	MaxParsingQueue:   64,
	// Held for as long as it rests: the slots' work takes at most half of
	// their CPUs.
	ParsingDutyPercent: 30,
	// Ten times a batch of 200 ids.
	MaxVariableValues: 2_000,
	MaxResponseBytes:  32 << 20,
	KeepAlive:         15 * time.Second,
	// As many streams as subscriptions (live.DefaultMaxSubscriptions),
	// a tenth of them for one client.
	MaxConnections:            1000,
	MaxConnectionsPerClient:   100,
	MaxSubscriptionsPerClient: 100,
	StreamWriteTimeout:        10 * time.Second,
	// A client pings every few seconds at most.
	MaxPingsPerSecond: 5,
	MaxInitBytes:      16 << 10,
	// Half the CPUs: a crowd of subscribers leaves the rest to queries.
	MaxEvents: max(1, runtime.GOMAXPROCS(0)/2),
}

func (o Options) withDefaults() Options {
	d := DefaultOptions
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.ComplexityLimit <= 0 {
		o.ComplexityLimit = d.ComplexityLimit
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = d.MaxDepth
	}
	if o.MaxAliases <= 0 {
		o.MaxAliases = d.MaxAliases
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = d.MaxTokens
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = d.MaxBodyBytes
	}
	if o.MaxNodes <= 0 {
		o.MaxNodes = d.MaxNodes
	}
	if o.MaxFields <= 0 {
		o.MaxFields = d.MaxFields
	}
	if o.MaxSameName <= 0 {
		o.MaxSameName = d.MaxSameName
	}
	if o.MaxVariablesBytes <= 0 {
		o.MaxVariablesBytes = d.MaxVariablesBytes
	}
	if o.MaxParsing <= 0 {
		o.MaxParsing = d.MaxParsing
	}
	if o.MaxParsingQueue <= 0 {
		o.MaxParsingQueue = d.MaxParsingQueue
	}
	if o.ParsingDutyPercent <= 0 || o.ParsingDutyPercent > 100 {
		o.ParsingDutyPercent = d.ParsingDutyPercent
	}
	if o.MaxVariableValues <= 0 {
		o.MaxVariableValues = d.MaxVariableValues
	}
	if o.MaxErrors <= 0 {
		o.MaxErrors = d.MaxErrors
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = d.MaxResponseBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = d.KeepAlive
	}
	if o.RecheckInterval <= 0 {
		o.RecheckInterval = 30 * time.Second
	}
	if o.EventTimeout <= 0 {
		o.EventTimeout = o.Timeout
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = d.MaxConnections
	}
	if o.MaxConnectionsPerClient <= 0 {
		o.MaxConnectionsPerClient = d.MaxConnectionsPerClient
	}
	if o.MaxSubscriptionsPerClient <= 0 {
		o.MaxSubscriptionsPerClient = d.MaxSubscriptionsPerClient
	}
	if o.StreamWriteTimeout <= 0 {
		o.StreamWriteTimeout = d.StreamWriteTimeout
	}
	if o.MaxPingsPerSecond <= 0 {
		o.MaxPingsPerSecond = d.MaxPingsPerSecond
	}
	if o.MaxEvents <= 0 {
		o.MaxEvents = d.MaxEvents
	}
	if o.MaxInitBytes <= 0 {
		o.MaxInitBytes = d.MaxInitBytes
	}
	return o
}
