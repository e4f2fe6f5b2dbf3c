// Package scalar implements the custom GraphQL scalars of the API:
// DateTime (RFC 3339, UTC, millisecond precision), SafeInt (an integer in
// 0..2^53−1 served as a JSON number) and JSON (any JSON value, passed through
// unchanged). Input that does not fit is refused with a message the graph
// package reports as BAD_USER_INPUT.
package scalar

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store/vocab"
)

const dateTimeLayout = "2006-01-02T15:04:05.000Z"

// MarshalDateTime writes ms as "2026-11-30T03:06:42.123Z".
func MarshalDateTime(ms snapshot.Millis) graphql.Marshaler { return dateTime(ms) }

// dateTime writes itself without formatting a string first: a page of runs
// writes several of them per run.
type dateTime snapshot.Millis

func (ms dateTime) MarshalGQL(w io.Writer) {
	var buf [len(dateTimeLayout) + 8]byte
	_, _ = w.Write(AppendDateTime(buf[:0], snapshot.Millis(ms)))
}

// AppendDateTime appends ms to b as MarshalDateTime writes it, quotes
// included.
func AppendDateTime(b []byte, ms snapshot.Millis) []byte {
	if ms < 0 || ms >= maxCivilMillis {
		return appendDateTimeOf(b, ms)
	}
	// The civil date of a day count in whole numbers (the proleptic
	// Gregorian calendar in eras of 400 years, as time's own arithmetic
	// does), without a time.Time: a page of runs writes several dates
	// per run, and the calls into time showed in its profile.
	days, rem := int(ms/msPerDay), int(ms%msPerDay)
	z := days + daysTo1970
	era := z / daysPerEra
	doe := z - era*daysPerEra
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day := doy - (153*mp+2)/5 + 1
	month := mp + 3
	if mp >= 10 {
		month = mp - 9
	}
	year := yoe + era*400
	if month <= 2 {
		year++
	}
	b = append(b, '"')
	b = append2(b, year/100)
	b = append2(b, year%100)
	b = append(b, '-')
	b = append2(b, month)
	b = append(b, '-')
	b = append2(b, day)
	b = append(b, 'T')
	b = append2(b, rem/3_600_000)
	b = append(b, ':')
	b = append2(b, rem/60_000%60)
	b = append(b, ':')
	b = append2(b, rem/1000%60)
	b = append(b, '.', byte('0'+rem%1000/100))
	b = append2(b, rem%100)
	return append(b, 'Z', '"')
}

const (
	msPerDay = 86_400_000
	// daysTo1970 counts the days from 0000-03-01, where an era starts,
	// to 1970-01-01.
	daysTo1970 = 719_468
	daysPerEra = 146_097
	// maxCivilMillis is 10000-01-01T00:00:00Z: from there years have five
	// digits, which appendDateTimeOf writes.
	maxCivilMillis = 253_402_300_800_000
)

// twoDigits are 00 to 99, each two bytes.
const twoDigits = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// append2 appends 0 ≤ n ≤ 99 in two digits.
func append2(b []byte, n int) []byte {
	return append(b, twoDigits[2*n], twoDigits[2*n+1])
}

// appendDateTimeOf is AppendDateTime by way of the layout, for the years
// the civil arithmetic leaves: those after 9999, which are rare enough
// that parsing the layout each time costs nothing that shows.
func appendDateTimeOf(b []byte, ms snapshot.Millis) []byte {
	b = append(b, '"')
	b = time.UnixMilli(int64(ms)).UTC().AppendFormat(b, dateTimeLayout)
	return append(b, '"')
}

// UnmarshalDateTime reads an RFC 3339 time with at most millisecond
// precision, in 1970..2^53−1 ms.
func UnmarshalDateTime(v any) (snapshot.Millis, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("DateTime must be an RFC 3339 string, got %T", v)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("DateTime %s is not RFC 3339 (e.g. 2026-11-30T03:06:42.123Z)", vocab.Quote(s))
	}
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		return 0, fmt.Errorf("DateTime %s is more precise than a millisecond", vocab.Quote(s))
	}
	ms := t.UnixMilli()
	if ms < 0 || ms > vocab.MaxSafe {
		return 0, fmt.Errorf("DateTime %s is outside 1970-01-01 .. 2^53-1 ms", vocab.Quote(s))
	}
	return snapshot.Millis(ms), nil
}

// MarshalSafeInt writes n as a JSON number.
func MarshalSafeInt(n int64) graphql.Marshaler { return safeInt(n) }

type safeInt int64

func (n safeInt) MarshalGQL(w io.Writer) {
	var buf [20]byte
	_, _ = w.Write(AppendSafeInt(buf[:0], int64(n)))
}

// AppendSafeInt appends n to b as MarshalSafeInt writes it.
func AppendSafeInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }

// UnmarshalSafeInt reads an integer in 0..2^53−1, given as a number or as a
// string of digits.
func UnmarshalSafeInt(v any) (int64, error) {
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case int:
		n = int64(x)
	case json.Number:
		i, err := x.Int64()
		if err != nil {
			return 0, fmt.Errorf("SafeInt must be an integer in 0..2^53-1, got %s", vocab.Quote(x.String()))
		}
		n = i
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("SafeInt must be an integer in 0..2^53-1, got %v", x)
		}
		if math.Abs(x) > vocab.MaxSafe {
			return 0, fmt.Errorf("SafeInt must be an integer in 0..2^53-1, got %v", x)
		}
		n = int64(x)
	case string:
		i, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("SafeInt must be an integer in 0..2^53-1, got %s", vocab.Quote(x))
		}
		n = i
	default:
		return 0, fmt.Errorf("SafeInt must be an integer in 0..2^53-1, got %T", v)
	}
	if n < 0 || n > vocab.MaxSafe {
		return 0, fmt.Errorf("SafeInt must be an integer in 0..2^53-1, got %d", n)
	}
	return n, nil
}

// MarshalJSON writes raw unchanged; nil is JSON null.
func MarshalJSON(raw json.RawMessage) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		if raw == nil {
			_, _ = io.WriteString(w, "null")
			return
		}
		_, _ = w.Write(raw)
	})
}

// UnmarshalJSON accepts any JSON value.
func UnmarshalJSON(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("JSON input is not representable as JSON")
	}
	return b, nil
}
