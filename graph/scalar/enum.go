package scalar

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"

	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// The API's enums are the store's values spelled in upper case (pending is
// PENDING, timed_out is TIMED_OUT); the Go types keep the store's spelling,
// so the GraphQL one lives only here. gqlgen binds each enum to its
// Marshal and Unmarshal functions (gqlgen.yml).

// MarshalRunStatus writes s as a RunStatus value.
func MarshalRunStatus(s vocab.Status) graphql.Marshaler { return upper(s) }

// UnmarshalRunStatus reads a RunStatus value.
func UnmarshalRunStatus(v any) (vocab.Status, error) {
	return fromUpper(v, "RunStatus", vocab.Statuses)
}

// MarshalWaitingKind writes k as a WaitingKind value.
func MarshalWaitingKind(k vocab.WaitingKind) graphql.Marshaler { return upper(k) }

// UnmarshalWaitingKind reads a WaitingKind value.
func UnmarshalWaitingKind(v any) (vocab.WaitingKind, error) {
	return fromUpper(v, "WaitingKind", vocab.WaitingKinds)
}

// MarshalStepType writes t as a StepType value.
func MarshalStepType(t vocab.StepType) graphql.Marshaler { return upper(t) }

// UnmarshalStepType reads a StepType value.
func UnmarshalStepType(v any) (vocab.StepType, error) {
	return fromUpper(v, "StepType", vocab.StepTypes)
}

// MarshalStepState writes s as a StepState value.
func MarshalStepState(s snapshot.StepState) graphql.Marshaler { return upper(s) }

// UnmarshalStepState reads a StepState value.
func UnmarshalStepState(v any) (snapshot.StepState, error) {
	return fromUpper(v, "StepState", snapshot.StepStates)
}

// MarshalAttemptState writes s as an AttemptState value.
func MarshalAttemptState(s vocab.AttemptState) graphql.Marshaler { return upper(s) }

// UnmarshalAttemptState reads an AttemptState value.
func UnmarshalAttemptState(v any) (vocab.AttemptState, error) {
	return fromUpper(v, "AttemptState", vocab.AttemptStates)
}

// MarshalResultType writes t as a ResultType value.
func MarshalResultType(t vocab.ResultType) graphql.Marshaler { return upper(t) }

// UnmarshalResultType reads a ResultType value.
func UnmarshalResultType(v any) (vocab.ResultType, error) {
	return fromUpper(v, "ResultType", vocab.ResultTypes)
}

// MarshalRunEventType writes t as a RunEventType value.
func MarshalRunEventType(t vocab.RunEventType) graphql.Marshaler { return upper(t) }

// UnmarshalRunEventType reads a RunEventType value.
func UnmarshalRunEventType(v any) (vocab.RunEventType, error) {
	return fromUpper(v, "RunEventType", vocab.RunEventTypes)
}

// MarshalRunOrder writes o as a RunOrder value, which is spelled as in Go.
func MarshalRunOrder(o snapshot.RunOrder) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) { _, _ = io.WriteString(w, strconv.Quote(string(o))) })
}

// UnmarshalRunOrder reads a RunOrder value.
func UnmarshalRunOrder(v any) (snapshot.RunOrder, error) {
	if s, _ := v.(string); slices.Contains(snapshot.RunOrders, snapshot.RunOrder(s)) {
		return snapshot.RunOrder(s), nil
	}
	return "", fmt.Errorf("%v is not a RunOrder", v)
}

// upper writes v upper-cased, as a JSON string. The values of the API's
// enums are spelled once, here, so that writing one allocates nothing.
func upper[T ~string](v T) graphql.Marshaler {
	if q, ok := spelled[string(v)]; ok {
		return q
	}
	return spell(string(v))
}

// quoted is an enum value as the response spells it, quotes included.
type quoted struct{ json string }

func (q *quoted) MarshalGQL(w io.Writer) { _, _ = io.WriteString(w, q.json) }

func spell(v string) *quoted { return &quoted{strconv.Quote(strings.ToUpper(v))} }

// spelled holds the response spelling of every value of the enums above.
var spelled = func() map[string]*quoted {
	m := map[string]*quoted{}
	spellAll(m, vocab.Statuses)
	spellAll(m, vocab.WaitingKinds)
	spellAll(m, vocab.StepTypes)
	spellAll(m, snapshot.StepStates)
	spellAll(m, vocab.AttemptStates)
	spellAll(m, vocab.ResultTypes)
	spellAll(m, vocab.RunEventTypes)
	return m
}()

func spellAll[T ~string](m map[string]*quoted, values []T) {
	for _, v := range values {
		m[string(v)] = spell(string(v))
	}
}

// fromUpper returns the value of values whose upper-case spelling v is.
func fromUpper[T ~string](v any, name string, values []T) (T, error) {
	if s, ok := v.(string); ok && s == strings.ToUpper(s) {
		if i := slices.IndexFunc(values, func(want T) bool { return strings.ToUpper(string(want)) == s }); i >= 0 {
			return values[i], nil
		}
	}
	return "", fmt.Errorf("%v is not a %s", v, name)
}
