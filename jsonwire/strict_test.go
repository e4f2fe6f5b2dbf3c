package jsonwire

import "testing"

func TestDecodeStrictRefusesUnknownMembersAndTrailingValues(t *testing.T) {
	type entry struct {
		Name string `json:"name"`
	}
	cases := []struct {
		in string
		ok bool
	}{
		{`[{"name":"a"}]`, true},
		{" [{\"name\":\"a\"}] \n", true},
		{`[{"name":"a","nmae":"b"}]`, false},
		{`[{"name":"a"}] [{"name":"b"}]`, false},
		{`[{"name":"a"}`, false},
		{``, false},
	}
	for _, c := range cases {
		var got []entry
		if err := DecodeStrict([]byte(c.in), &got); (err == nil) != c.ok {
			t.Errorf("%q: error %v, want ok %v", c.in, err, c.ok)
		}
	}
}
