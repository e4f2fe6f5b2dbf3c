package store

import (
	"encoding/json"
	"fmt"
)

// TextPairs returns a SELECT of two text columns, id and sub, one row per
// pair of the list bound to placeholder n (see TextPairsArg): the
// composite keys (a run id and a step id, say) that one statement reads a
// batch of rows by. Both dialects take the pairs as one JSON array of
// two-element arrays, since neither has a portable array-of-rows
// parameter: json_array_elements on PostgreSQL, json_each on SQLite.
func (d Dialect) TextPairs(n int) string {
	if d == Postgres {
		return fmt.Sprintf("SELECT p.k->>0 AS id, p.k->>1 AS sub FROM json_array_elements($%d::json) AS p(k)", n)
	}
	return fmt.Sprintf("SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS sub FROM json_each($%d)", n)
}

// TextPairsArg returns the argument that binds pairs to a TextPairs
// placeholder.
func (d Dialect) TextPairsArg(pairs [][2]string) any {
	if pairs == nil {
		pairs = [][2]string{}
	}
	b, _ := json.Marshal(pairs) // strings always marshal
	return string(b)
}
