// Package fault is flowsnap's one error type: an error with a code that a
// client can act on and a message that is safe to show it.
//
// Errors are created with a code where the problem is found, wrapped with
// context on the way up ("reading run %q: %w"), and translated to the GraphQL
// extensions.code at exactly one boundary, in package graph. A message never
// carries SQL text, file paths or secrets: causes that might (driver errors)
// are kept in Err for logs and never shown to a client.
package fault

import (
	"context"
	"errors"
	"fmt"
)

// Code classifies an error for clients. The values are the extensions.code of
// the GraphQL API and are part of the interface.
type Code string

// The codes of the API.
const (
	BadUserInput      Code = "BAD_USER_INPUT"
	BadCursor         Code = "BAD_CURSOR"
	DecodeFailed      Code = "DECODE_FAILED"
	PersistenceFailed Code = "PERSISTENCE_FAILED"
	ComplexityLimit   Code = "COMPLEXITY_LIMIT"
	Timeout           Code = "TIMEOUT"
	// SourceChanged: a position a client holds is not from this store's
	// history (another store, or one restored to an older revision).
	SourceChanged Code = "SOURCE_CHANGED"
	Internal      Code = "INTERNAL"
)

// Stale: no copy of the store flowsnap may read has reached the revision a
// request asked for (docs/contract.md#replicas) within the time it may wait; the client may
// retry. Details carries the revision that was available.
const Stale Code = "STALE"

// SubscriptionLimit: the server already serves as many subscriptions as it
// may.
const SubscriptionLimit Code = "SUBSCRIPTION_LIMIT"

// Unauthenticated: the request carries no credential, or one that is not
// valid (docs/contract.md#access-control). Over HTTP it comes with status 401.
const Unauthenticated Code = "UNAUTHENTICATED"

// Forbidden: the principal may not read this value, a payload field without
// the payloads permission (docs/contract.md#access-control).
const Forbidden Code = "FORBIDDEN"

// Error is an error with a code. Message is safe to show a client; Err, when
// set, is the underlying cause, for logs only.
type Error struct {
	Code    Code
	Message string
	// RunID names the run the error is about, when there is one.
	RunID string
	// Details are further facts for the client, added to the error's
	// extensions beside the code (for STALE, the revisions).
	Details map[string]any
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message. The
// message must not include anything a client may not see.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error with the given code and safe message, keeping cause
// for logs. A context error as cause becomes TIMEOUT whatever code is given,
// so a deadline or a cancelled request is never reported as a broken store.
func Wrap(code Code, cause error, format string, args ...any) *Error {
	if errors.Is(cause, context.DeadlineExceeded) || errors.Is(cause, context.Canceled) {
		code = Timeout
	}
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: cause}
}

// CodeOf returns the code of the first *Error in err's chain, TIMEOUT for a
// context error, and INTERNAL for anything else.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return Timeout
	}
	return Internal
}

// MessageOf returns what a client may be told about err: the context the
// error gathered on the way up, down to and including the message of the
// first *Error, but nothing of that error's cause. An error without an *Error
// in its chain gets a generic message.
func MessageOf(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if !errors.As(err, &e) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return "the operation was cancelled or ran out of time"
		}
		return "internal error"
	}
	full, inner := err.Error(), e.Error()
	if len(full) >= len(inner) && full[len(full)-len(inner):] == inner {
		return full[:len(full)-len(inner)] + e.Message
	}
	return e.Message
}
