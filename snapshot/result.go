package snapshot

// Result is one element of a batch read: its value, or the error that
// element alone failed with (BAD_USER_INPUT for a malformed id or page
// request, BAD_CURSOR, DECODE_FAILED for a broken row). A batch read fails
// as a whole, with an error of its own, only when the store cannot be read.
type Result[T any] struct {
	Value T
	Err   error
}

// Get returns the value and the error.
func (r Result[T]) Get() (T, error) { return r.Value, r.Err }
