package jsonwire

import (
	"bytes"
	"encoding/json"
	"errors"
)

// DecodeStrict decodes data, which must hold one JSON value, into v as
// encoding/json does, but refuses a member v has no field for (a misspelt
// name in a file an operator wrote must not be silently ignored) and
// anything after the value.
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more JSON after the first value")
	}
	return nil
}
